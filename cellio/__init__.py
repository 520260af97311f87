"""cellio: the project's torch-free layer.

* :mod:`.cli` -- argparse types, the launcher arguments and the report of user errors
  that every command line shares.

The modules import neither torch, mmengine, mmdet nor another package of the project: a
command line prints its help and its errors without loading torch. ``mmdet_pu`` builds
on it.
"""
