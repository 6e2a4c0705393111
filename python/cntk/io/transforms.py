"""Image transforms for :class:`cntk.io.ImageDeserializer` (CNTK's ``cntk.io.transforms``).

Each function returns a dict describing one transform, with CNTK's configuration keys; the image
deserializer applies the transforms of its image stream in the order given.
"""

__all__ = ['crop', 'scale', 'mean', 'color']


def crop(crop_type='center', crop_size=0, side_ratio=0.0, area_ratio=0.0, aspect_ratio=1.0, jitter_type='none'):
    """Crop transform.

    Args:
        crop_type (str): 'center', 'randomside', 'randomarea' or 'multiview10' ('random' is 'randomside').
          Random crops also flip the image horizontally with probability 1/2; 'multiview10' gives ten
          sequences per image: the four corners and the centre, then the same five flipped.
        crop_size (int or str): the window in pixels, ``256`` or ``'256:224'`` (width:height); when
          given, the ratios are ignored. 0: use the ratios.
        side_ratio (float or str): window side as a fraction of the image's shorter side, in (0, 1];
          ``'0.5:0.75'`` gives a range (drawn uniformly with jitter_type 'uniratio'). 0: not used.
        area_ratio (float or str): window area as a fraction of the image's area, in (0, 1]; a range
          as for side_ratio. Cannot be combined with side_ratio. 0: not used.
        aspect_ratio (float or str): width/height (or height/width, each with probability 1/2) of the
          window at constant area, in (0, 1]; a range as for side_ratio.
        jitter_type (str): 'none' (the lower end of each range) or 'uniratio' (uniform in the range).

    Returns:
        dict: the transform's description.
    """
    return dict(type='Crop', cropType=crop_type, cropSize=crop_size, sideRatio=side_ratio, areaRatio=area_ratio,
                aspectRatio=aspect_ratio, jitterType=jitter_type)


def scale(width, height, channels, interpolations='linear', scale_mode='fill', pad_value=-1):
    """Scale transform: resizes every image to ``width`` x ``height``; it fixes the image stream's
    shape ``(channels, height, width)``. ``channels`` 1 decodes images as grey, 3 as B, G, R.

    Args:
        interpolations (str): 'nearest', 'linear', 'cubic' or 'lanczos' (several joined with ':' draw
          one per image).
        scale_mode (str): 'fill' (stretch to the target), 'crop' (scale to cover the target, cut the
          centre) or 'pad' (scale to fit inside the target, centre it and pad the rest).
        pad_value (int): the padding value in [0, 255] for 'pad', or -1 to replicate the border.

    Returns:
        dict: the transform's description.
    """
    return dict(type='Scale', width=width, height=height, channels=channels, interpolations=interpolations,
                scaleMode=scale_mode, padValue=pad_value)


def mean(filename):
    """Mean transform: subtracts the mean image stored in ``filename``, an OpenCV XML FileStorage file
    with ``Channel``, ``Row``, ``Col`` and the ``MeanImg`` matrix (pixels in row order, channels
    B, G, R interleaved), as CNTK writes it. The image must have that size when this transform runs.

    Returns:
        dict: the transform's description.
    """
    return dict(type='Mean', meanFile=filename)


def color(brightness_radius=0.0, contrast_radius=0.0, saturation_radius=0.0):
    """Colour jitter. Each radius is in [0, 1]; for each image a value x is drawn uniformly from
    [-radius, radius]: brightness adds ``x * mean`` (the mean of all the image's values), contrast
    multiplies by ``1 + x`` (values are then clipped to [0, 255]), saturation multiplies the HSV
    saturation by ``1 + x`` (colour images only).

    Returns:
        dict: the transform's description.
    """
    return dict(type='Color', brightnessRadius=brightness_radius, contrastRadius=contrast_radius,
                saturationRadius=saturation_radius)
