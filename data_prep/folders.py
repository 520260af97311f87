"""Finding the per-slide or per-case folders of a raw dataset."""
import re
from pathlib import Path
from typing import Callable, Dict, Iterable


def unique_folders(candidates: Iterable[Path], pattern: re.Pattern, kind: str,
                   show: Callable[[Path], str] = str) -> Dict[str, Path]:
    """``{name: folder}`` of the directories among ``candidates`` whose name matches
    ``pattern``; a name found twice is an error naming both places (``show`` formats a
    path for the message)."""
    found = {}
    for folder in candidates:
        if not (folder.is_dir() and pattern.fullmatch(folder.name)):
            continue
        if folder.name in found:
            raise ValueError(f'{kind} {folder.name} is present twice: '
                             f'{show(found[folder.name])} and {show(folder)}')
        found[folder.name] = folder
    return found
