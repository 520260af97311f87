from . import backbones, dense_heads, losses, roi_heads  # noqa: F401
