"""Run every benchmark of benchmarks/README.md in turn and print their reports.

Each benchmark measures its own ratio side by side in one process (see its docstring);
this script only runs them one after the other so they do not compete for the cores.

    python benchmarks/run_all.py [--quick]
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = [
    ('PU vs each detector\'s own loss, training step', 'loss_overhead.py', ['--rounds', '30'],
     ['--rounds', '5']),
    ('PU with box-fit negatives vs each detector\'s own loss, training step',
     'loss_overhead.py', ['--rounds', '30', '--box-fit'], ['--rounds', '5', '--box-fit']),
    ('PriorUpdateHook overhead', 'prior_hook_overhead.py', ['--iters', '20'],
     ['--iters', '4']),
    ('tiled inference throughput', 'tiled_inference_throughput.py', ['--rounds', '5'],
     ['--rounds', '1', '--size', '512']),
    ('data_prep on a large TIFF', 'data_prep_throughput.py', ['--size', '10000'],
     ['--size', '2000']),
    ('whole-slide inference', 'slide_inference.py', ['--rounds', '6'],
     ['--size', '3000', '--discs', '1', '--radius', '300', '--roi-size', '512',
      '--rounds', '1']),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='few rounds and small inputs (a smoke run, not figures)')
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for title, script, full, quick in BENCHMARKS:
        print(f'\n## {title} (benchmarks/{script})', flush=True)
        start = time.time()
        subprocess.run([sys.executable, str(REPO / 'benchmarks' / script),
                        *(quick if args.quick else full)], cwd=REPO, env=env, check=True)
        print(f'({time.time() - start:.0f} s)', flush=True)


if __name__ == '__main__':
    main()
