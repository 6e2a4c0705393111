"""Observation preprocessing pipelines.

A preprocessor is built as ``cls(input_shape, *args)``, where ``args`` come
from the agent's ``PreProcessingArgs`` config entry, and is reset at the start
of each episode. It turns each raw observation into the network's input.
"""

from abc import ABC, abstractmethod
from collections import deque

import numpy as np


class Preprocessing(ABC):
    """Interface of a preprocessing pipeline.

    Args:
        input_shape (tuple): shape of the raw observations.
    """

    def __init__(self, input_shape):
        self._input_shape = tuple(input_shape)

    @abstractmethod
    def output_shape(self):
        """Shape of a preprocessed observation."""

    @abstractmethod
    def reset(self):
        """Forget all history; called when a new episode starts."""

    @abstractmethod
    def preprocess(self, observation):
        """Consume one raw observation and return the network input."""


class AtariPreprocessing(Preprocessing):
    """The frame preprocessing of the DQN Nature paper for Atari 2600 screens.

    Each RGB frame (``210 x 160 x 3``) is max-pooled pixelwise with the previous
    frame (Atari sprites flicker between frames), reduced to its luminance,
    resized to ``84 x 84`` and pushed onto a stack of the last ``history_len``
    such images, which is the returned ``(history_len, 84, 84)`` uint8 array.
    """

    _SIZE = 84

    def __init__(self, input_shape, history_len=4):
        super(AtariPreprocessing, self).__init__(input_shape)
        self.__history_len = history_len
        self.__processed_image_seq = deque(maxlen=history_len)
        self.reset()

    def output_shape(self):
        return (self.__history_len, self._SIZE, self._SIZE)

    def reset(self):
        self.__previous_raw_image = np.zeros(self._input_shape, dtype=np.uint8)
        self.__processed_image_seq.clear()
        blank = np.zeros((self._SIZE, self._SIZE), dtype=np.uint8)
        self.__processed_image_seq.extend([blank] * self.__history_len)

    def preprocess(self, image):
        # PIL is only needed here; importing it lazily keeps the rest of the
        # package usable without it.
        from PIL import Image

        image = np.asarray(image)
        if image.shape != self._input_shape:
            raise ValueError('AtariPreprocessing: expected a frame of shape {0}, '
                             'got {1}'.format(self._input_shape, image.shape))
        merged = np.maximum(image, self.__previous_raw_image).astype(np.uint8)
        luminance = Image.fromarray(merged).convert('YCbCr').getchannel(0)
        small = luminance.resize((self._SIZE, self._SIZE), Image.BILINEAR)
        self.__processed_image_seq.append(np.asarray(small, dtype=np.uint8))
        self.__previous_raw_image = image
        return np.stack(self.__processed_image_seq)


class SlidingWindow(Preprocessing):
    """Stacks the last ``history_len`` observations: ``(x[t-m+1], ..., x[t])``.

    Gives a memoryless network a short view of the past. Before an episode has
    produced ``history_len`` observations the window is padded with zeros.

    Args:
        input_shape (tuple): shape of one observation.
        history_len (int): window length m.
        dtype: required dtype of the observations (also of the padding).
    """

    def __init__(self, input_shape, history_len=4, dtype=np.float32):
        super(SlidingWindow, self).__init__(input_shape)
        self.__dtype = np.dtype(dtype)
        self.__history_len = history_len
        self.__history = deque(maxlen=history_len)
        self.reset()

    def output_shape(self):
        return (self.__history_len,) + self._input_shape

    def reset(self):
        self.__history.clear()
        padding = np.zeros(self._input_shape, dtype=self.__dtype)
        self.__history.extend([padding] * self.__history_len)

    def preprocess(self, x):
        if x.shape != self._input_shape:
            raise ValueError('SlidingWindow: expected an observation of shape '
                             '{0}, got {1}'.format(self._input_shape, x.shape))
        if x.dtype != self.__dtype:
            raise ValueError('SlidingWindow: expected an observation of dtype '
                             '{0}, got {1}'.format(self.__dtype, x.dtype))
        self.__history.append(x)
        return np.stack(self.__history)
