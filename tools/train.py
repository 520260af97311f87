"""Train a detector: the command line of :mod:`mmdet_pu.commands.train` (its docstring
gives the usage; ``python tools/train.py -h`` the options)."""
from mmdet_pu.commands.train import main

if __name__ == '__main__':
    main()
