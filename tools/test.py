"""Test (and evaluate) a detector: the command line of :mod:`mmdet_pu.commands.test`
(its docstring gives the usage; ``python tools/test.py -h`` the options)."""
from mmdet_pu.commands.test import main

if __name__ == '__main__':
    main()
