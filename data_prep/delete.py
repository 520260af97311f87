"""Export the incomplete annotations a deletion scheme leaves (Section 3.1).

Usage::

    python data_prep/delete.py ANN_JSON --scheme keep1_random --out OUT_JSON
    python data_prep/delete.py ANN_JSON --cfg configs/_base_/deletion/x.py --out OUT_JSON

``--scheme NAME`` reads ``configs/_base_/deletion/NAME.py``; ``--cfg`` any config file
defining ``deletion``. The result is what ``CellCocoDataset(deletion=...)`` uses in
training, written atomically: the scheme draws among the annotations the dataset loads of
the training classes (``--classes``, or the ``metainfo.classes`` of ``--cfg``; default
every category of the file), and the others stay as they are. The kept fraction per
class is printed next to the paper's figure for that scheme.
"""
import argparse
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if __package__ in (None, ''):  # run as a script: make `data_prep` importable
    sys.path.insert(0, str(REPO))

from mmengine.config import Config  # noqa: E402

from cellio.atomic import write_json_atomic  # noqa: E402
from cellio.cli import report_user_errors  # noqa: E402
from mmdet_pu.datasets.deletion import build_deletion, delete_from_coco  # noqa: E402

DELETION_CONFIGS = REPO / 'configs' / '_base_' / 'deletion'

#: The fields of a COCO file that a deletion reads (CellCocoDataset's loading rules),
#: by section: every entry of each section must have them.
COCO_FIELDS = {
    'images': ('id', 'file_name', 'width', 'height'),
    'annotations': ('id', 'image_id', 'category_id', 'bbox', 'area'),
    'categories': ('id', 'name'),
}

#: Kept fractions reported in the paper (train + val sets), by scheme config name.
PAPER_KEPT = {
    'keep1_random': 'MITOS-ATYPIA-14 ~73 %, CRCHisto ~2 %',
    'keep1_agreement': 'MITOS-ATYPIA-14 ~73 % (one cell per patch, as keep1_random)',
    'keep2_random': 'CRCHisto ~4 %',
    'keep5_random': 'CRCHisto ~9 %',
    'cap10_per_class': 'NuCLS tumor ~50 %, lymphocyte ~60 %, stromal ~71 %',
    'tupac_original_keep1': 'TUPAC16 ~63 % (of the alternative labels; the original '
                            'labels alone: 1273 vs 1359 cells in the 23 cases)',
    'none': '100 % (complete annotations)',
}


def kept_fractions(before, after):
    """``{class name: (n before, n after)}`` of two COCO dicts with the same categories."""
    names = {cat['id']: cat['name'] for cat in before['categories']}
    n_before = Counter(ann['category_id'] for ann in before['annotations'])
    n_after = Counter(ann['category_id'] for ann in after['annotations'])
    return {name: (n_before[cat_id], n_after[cat_id]) for cat_id, name in names.items()}


def json_type(value) -> str:
    """The JSON name of the type of a parsed JSON ``value`` (for messages)."""
    names = {dict: 'an object', list: 'an array', str: 'a string', bool: 'a boolean',
             int: 'a number', float: 'a number', type(None): 'null'}
    return names.get(type(value), type(value).__name__)


def check_coco(coco, path) -> None:
    """Check that ``coco`` (the parsed ``path``) has the structure of a COCO file, so
    that a wrong file gives one message instead of a failure inside the deletion.

    Raises:
        ValueError: naming ``path`` and the first missing or wrong field.
    """
    if not isinstance(coco, dict):
        raise ValueError(f'{path}: expected a COCO object {{"images": [...], '
                         f'"annotations": [...], "categories": [...]}}, got '
                         f'{json_type(coco)}')
    for section, fields in COCO_FIELDS.items():
        if not isinstance(coco.get(section), list):
            found = 'missing' if section not in coco else json_type(coco[section])
            raise ValueError(f'{path}: "{section}": expected an array, got {found}')
        for i, entry in enumerate(coco[section]):
            if not isinstance(entry, dict):
                raise ValueError(f'{path}: {section}[{i}]: expected an object, got '
                                 f'{json_type(entry)}')
            missing = [field for field in fields if field not in entry]
            if missing:
                raise ValueError(f'{path}: {section}[{i}] has no "{missing[0]}" (a COCO '
                                 f'{section[:-1]} needs {", ".join(fields)})')
    for i, ann in enumerate(coco['annotations']):
        bbox = ann['bbox']
        if not (isinstance(bbox, list) and len(bbox) == 4
                and all(isinstance(v, (int, float)) for v in bbox)):
            raise ValueError(f'{path}: annotations[{i}] "bbox": expected [x, y, w, h] '
                             f'(four numbers), got {bbox!r}')


def load_scheme_config(scheme=None, cfg=None):
    """The ``deletion`` value of ``--scheme`` or ``--cfg``, the scheme's name and the
    config's ``metainfo.classes`` (None without)."""
    path = Path(cfg) if cfg else DELETION_CONFIGS / f'{scheme}.py'
    if not path.is_file():
        known = sorted(p.stem for p in DELETION_CONFIGS.glob('*.py'))
        raise FileNotFoundError(f'deletion config {path} not found (schemes: '
                                f'{", ".join(known)})')
    config = Config.fromfile(str(path))
    if 'deletion' not in config:
        raise ValueError(f'{path} does not define `deletion`')
    deletion = config['deletion']
    classes = config.get('metainfo', {}).get('classes')
    return ((deletion.to_dict() if hasattr(deletion, 'to_dict') else deletion), path.stem,
            None if classes is None else tuple(classes))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('ann_json', type=Path, help='complete COCO annotation file')
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument('--scheme', help='name of a configs/_base_/deletion/ file')
    source.add_argument('--cfg', type=Path, help='config file defining `deletion`')
    parser.add_argument('--seed', type=int, help='override the scheme seed')
    parser.add_argument('--classes', nargs='+', metavar='NAME',
                        help="the training config's metainfo.classes (default: those of "
                        '--cfg, else every category of the file)')
    parser.add_argument('--out', type=Path, required=True, help='output COCO file')
    args = parser.parse_args(argv)

    deletion, name, classes = load_scheme_config(args.scheme, args.cfg)
    classes = args.classes or classes
    if args.seed is not None and deletion is not None:
        deletion = dict(deletion, seed=args.seed)
    if args.out.resolve() == args.ann_json.resolve():
        raise ValueError('--out must differ from the input file (it is never modified)')
    try:
        coco = json.loads(args.ann_json.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f'{args.ann_json}: cannot read a COCO JSON file ({err})') from err
    check_coco(coco, args.ann_json)
    known = {cat['name'] for cat in coco['categories']}
    if classes and not set(classes) <= known:
        raise ValueError(f'{args.ann_json}: no category named {sorted(set(classes) - known)} '
                         f'(its categories: {sorted(known)})')
    incomplete = delete_from_coco(coco, build_deletion(deletion), classes)
    write_json_atomic(args.out, incomplete)

    print(f'{args.out}: scheme {name} = {deletion}')
    for cls, (before, after) in kept_fractions(coco, incomplete).items():
        share = f'{100 * after / before:.1f} %' if before else 'n/a'
        print(f'  {cls:<12} kept {after:>6} of {before:>6} ({share})')
    print(f'  paper: {PAPER_KEPT.get(name, "no figure for this scheme")}')
    return incomplete


if __name__ == '__main__':
    sys.exit(report_user_errors(main))
