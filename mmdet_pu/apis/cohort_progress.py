"""The progress bar of a cohort run (:class:`CohortProgress`)."""
import os
import threading
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from .cohort_records import RECORDS, record_path

#: Seconds between two refreshes of the cohort progress bar.
PROGRESS_INTERVAL = 2.0


class CohortProgress:
    """The overall progress bar (slides of the whole cohort), on process 0: it counts
    the records of the pending slides in OUT every :data:`PROGRESS_INTERVAL` seconds,
    so it follows every process."""

    def __init__(self, out_dir: Path, pending: Sequence[Path], total: int, enabled: bool):
        self.records = out_dir / RECORDS
        self.names = {record_path(out_dir, slide).name for slide in pending}
        self.initial = total - len(pending)
        self.bar = tqdm(total=total, initial=self.initial, unit='slide', desc='cohort',
                        disable=not enabled, dynamic_ncols=True)
        self.stop = threading.Event()
        self.thread = None
        if enabled and pending:
            self.thread = threading.Thread(target=self._poll, name='cohort-progress',
                                           daemon=True)
            self.thread.start()

    def refresh(self):
        """Count the records of the pending slides now."""
        try:
            names = {entry.name for entry in os.scandir(self.records)}
        except OSError:
            names = set()
        self.bar.n = self.initial + len(self.names & names)
        self.bar.refresh()

    def _poll(self):
        while not self.stop.wait(PROGRESS_INTERVAL):
            self.refresh()

    def close(self):
        """Stop polling, count a last time and close the bar."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        if not self.bar.disable:
            self.refresh()
        self.bar.close()
