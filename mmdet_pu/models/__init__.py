from . import backbones, dense_heads, losses, roi_heads, task_modules  # noqa: F401
