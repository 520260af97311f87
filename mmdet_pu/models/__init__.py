from . import backbones, dense_heads, detectors, losses, roi_heads, task_modules  # noqa: F401
