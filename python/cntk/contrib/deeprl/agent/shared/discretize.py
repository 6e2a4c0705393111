"""Mapping of continuous (gym ``Box``) observations onto a finite set of states."""

import numpy as np

from .spaces import space_kind


class BoxSpaceDiscretizer:
    """Divides each dimension of a ``Box`` space into equal-width bins.

    A point is mapped to the row-major index of its bin in the grid of all bins,
    so the first dimension varies slowest. Values at or beyond the bounds fall
    into the first or last bin of their dimension.

    Args:
        space: a gym ``Box`` space (anything with ``low``/``high`` arrays whose
            class is ``gym.spaces.box.Box``).
        resolution: number of bins, either one number for every dimension or an
            array shaped like ``space.low``.
    """

    def __init__(self, space, resolution):
        if space_kind(space) != 'Box':
            raise ValueError('BoxSpaceDiscretizer only discretizes Box spaces, '
                             'got {0}'.format(space))
        low = np.asarray(space.low, dtype=np.float64)
        high = np.asarray(space.high, dtype=np.float64)
        if np.isscalar(resolution):
            resolution = np.full(low.shape, resolution)
        resolution = np.asarray(resolution)
        if resolution.shape != low.shape:
            raise ValueError('resolution of shape {0} does not match the space '
                             'shape {1}'.format(resolution.shape, low.shape))
        self._state_mins = low
        self._state_maxs = high
        self._state_resolutions = resolution.astype(np.int64)
        self.num_states = int(np.prod(self._state_resolutions))

    def discretize(self, value):
        """Return the integer state index of observation ``value``."""
        value = np.asarray(value, dtype=np.float64)
        if value.shape != self._state_mins.shape:
            raise ValueError('observation of shape {0} does not match the space '
                             'shape {1}'.format(value.shape, self._state_mins.shape))
        bins = [self._bin(v, lo, hi, n) for v, lo, hi, n in zip(
            value.ravel(), self._state_mins.ravel(), self._state_maxs.ravel(),
            self._state_resolutions.ravel())]
        return int(np.ravel_multi_index(bins, self._state_resolutions.ravel()))

    @staticmethod
    def _bin(value, low, high, count):
        # Bounds are tested first so that a degenerate dimension (low == high)
        # never divides by zero.
        if value >= high:
            return count - 1
        if value <= low:
            return 0
        position = np.floor((value - low) * count / (high - low))
        return int(min(count - 1, max(0, position)))
