"""The README's first command, shortened: the demo runs end to end and reports."""
import json
import os
import subprocess
import sys

from tests._data import REPO


def test_short_demo_end_to_end(tmp_path):
    work_dir = tmp_path / 'demo'
    proc = subprocess.run(
        [sys.executable, 'tools/demo.py', '--variant', 'binary', '--iters', '2',
         '--num-images', '6', '--work-dir', str(work_dir), '--data-root',
         str(tmp_path / 'data')],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
        text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert '| method | recall | precision | F1 | gap closed |' in proc.stdout

    results = json.loads((work_dir / 'results.json').read_text())
    methods = [row['method'] for row in results['rows']]
    assert methods == ['CE baseline', 'naive PU', 'PU', 'upper bound']
    for row in results['rows']:
        metrics = results['metrics'][row['method']]
        assert row['f1'] == metrics['cell/avg_f1']
        assert metrics['cell/mitosis/fn'] + metrics['cell/mitosis/tp'] > 0  # test cells seen
    assert (work_dir / 'figure.png').stat().st_size > 10_000
    assert (work_dir / 'results.md').read_text().startswith('| method |')
