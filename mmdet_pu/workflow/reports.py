"""The one writer of the experiment tools' reports and figures.

Every report is written atomically (:mod:`cellio.atomic`): a Markdown text
(``results.md``), its data as JSON (``results.json``), a table as CSV and figures as PNG
drawn with matplotlib's non-interactive ``Agg`` backend.
"""
import csv
import io
import os.path as osp
from typing import Callable, List, Optional, Sequence

from cellio.atomic import write_atomic, write_json_atomic


def pyplot():
    """``matplotlib.pyplot`` on the ``Agg`` backend (no display needed)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, path: str, dpi: int = 110) -> None:
    """Write ``fig`` to ``path`` as PNG and close it."""
    png = io.BytesIO()
    fig.savefig(png, format='png', dpi=dpi)
    pyplot().close(fig)
    write_atomic(path, png.getvalue())


def write_json(path: str, data, indent: int = 1) -> None:
    """``data`` as JSON (``indent`` as :func:`json.dumps`)."""
    write_json_atomic(path, data, indent=indent)


def write_csv(path: str, fields: Sequence[str], rows: Sequence[dict]) -> None:
    """One row per dict of ``rows``, the columns ``fields`` (with a header)."""
    text = io.StringIO(newline='')
    writer = csv.DictWriter(text, fieldnames=list(fields))
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row[k] for k in fields})
    write_atomic(path, text.getvalue())


def write_results(work_dir: str, text: str, data: dict,
                  draw: Optional[Callable] = None, figure: str = 'results.png',
                  indent: int = 1) -> List[str]:
    """``results.md`` (``text``), ``results.json`` (``data``) and, with ``draw`` (a
    function returning a matplotlib figure), the figure ``figure`` in ``work_dir``.

    Returns:
        The names of the files written.
    """
    write_atomic(osp.join(work_dir, 'results.md'), text)
    write_json(osp.join(work_dir, 'results.json'), data, indent)
    written = ['results.md', 'results.json']
    if draw is not None:
        save_figure(draw(), osp.join(work_dir, figure))
        written.append(figure)
    return written
