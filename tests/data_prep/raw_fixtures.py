"""Miniature raw copies of the four datasets, in exactly the layouts of DATASETS.md.

Each ``make_*`` function writes a small raw tree under ``root`` with the documented
quirks and returns the ground truth the converter must recover. Images are noise in
[30, 200] with every annotated point painted white (``MARK``), so a test can check that
a point lands on its pixel in the written tiles; widths differ from heights everywhere so
an x/y swap cannot go unnoticed.
"""
import csv
import struct
from pathlib import Path

import numpy as np
import scipy.io
import tifffile
from PIL import Image

MARK = (255, 255, 255)
MITOS_SLIDES = ('A03', 'A04', 'A05', 'A07', 'A10', 'A11', 'A12', 'A14', 'A15', 'A17',
                'A18')


def noise_image(rng, height, width):
    """RGB noise in [30, 200] (never ``MARK``)."""
    return rng.integers(30, 201, (height, width, 3), dtype=np.uint8)


def paint(image, points_xy):
    """Paint the pixel nearest to each 0-based ``(x, y)`` point with ``MARK``."""
    for x, y in points_xy:
        image[int(round(y)), int(round(x))] = MARK
    return image


def write_bmp_rgba(path, rgba):
    """A 32-bit BMP with a BITMAPV5HEADER and an alpha mask (loads as RGBA)."""
    h, w, _ = rgba.shape
    pixels = np.ascontiguousarray(rgba[..., [2, 1, 0, 3]]).tobytes()  # BGRA, top-down
    offset = 14 + 124
    header = struct.pack('<2sIHHI', b'BM', offset + len(pixels), 0, 0, offset)
    info = struct.pack('<IiiHHIIiiII', 124, w, -h, 1, 32, 3, len(pixels), 2835, 2835, 0, 0)
    info += struct.pack('<IIIII', 0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000,
                        0x73524742)  # RGBA masks, 'sRGB'
    info += bytes(36) + struct.pack('<7I', 0, 0, 0, 4, 0, 0, 0)
    Path(path).write_bytes(header + info + pixels)


def _write_lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(''.join(','.join(map(str, row)) + '\n' for row in rows))


# --------------------------------------------------------------------------- MITOS-14
def make_mitos14(root, size=(600, 560), doubled=('A04', 'A12'), seed=0):
    """MITOS-ATYPIA-14: 11 Aperio slides x 2 frames of ``size`` (W, H).

    Quirks: doubled slide folders, a 0-byte mitosis CSV, duplicate lines, points on the
    image border, ``_not_mitosis.csv`` files, x20 frames, atypia CSVs and JPG previews,
    Hamamatsu slides, tiled zlib TIFFs next to strip TIFFs.

    Returns:
        ``{source: [(x, y, score), ...]}`` of the unique mitoses per x40 frame.
    """
    rng = np.random.default_rng(seed)
    width, height = size
    root = Path(root)
    truth = {}
    for s, slide in enumerate(MITOS_SLIDES):
        base = root / slide / slide if slide in doubled else root / slide
        for f, frame in enumerate((f'{slide}_00Aa', f'{slide}_01Bc')):
            if s == 1 and f == 0:
                mitoses = []  # this frame's CSV is 0 bytes
            else:
                n = int(rng.integers(1, 5))
                xs = rng.integers(0, width, n)
                ys = rng.integers(0, height, n)
                mitoses = [(int(x), int(y), float(rng.choice([0.5, 0.6, 0.8, 1.0])))
                           for x, y in zip(xs, ys)]
                if f == 1:  # on the border: boxes must be clipped
                    mitoses += [(0, int(ys[0]), 1.0), (width - 1, height - 1, 0.6),
                                (int(xs[0]), 0, 0.8)]
            mitoses = list(dict.fromkeys(mitoses))
            rows = mitoses + mitoses[:1]  # one exact duplicate line
            image = paint(noise_image(rng, height, width), [m[:2] for m in mitoses])
            tiff = base / 'frames' / 'x40' / f'{frame}.tiff'
            tiff.parent.mkdir(parents=True, exist_ok=True)
            if s % 2:
                tifffile.imwrite(tiff, image, photometric='rgb', tile=(128, 256),
                                 compression='zlib')
            else:
                tifffile.imwrite(tiff, image, photometric='rgb', rowsperstrip=16)
            Image.fromarray(image[::8, ::8]).save(tiff.with_suffix('.jpg'))  # preview
            x20 = base / 'frames' / 'x20' / f'{frame[:-1]}.tiff'
            x20.parent.mkdir(parents=True, exist_ok=True)
            tifffile.imwrite(x20, image[::2, ::2], photometric='rgb')
            _write_lines(base / 'mitosis' / f'{frame}_mitosis.csv', rows)
            _write_lines(base / 'mitosis' / f'{frame}_not_mitosis.csv',
                         [(int(rng.integers(width)), int(rng.integers(height)), 0.25)])
            _write_lines(base / 'atypia' / 'x20' / f'{frame[:-1]}_decision.csv',
                         [('NUCLEAR_PLEOMORPHISM', 2)])
            truth[tiff.relative_to(root).as_posix()] = mitoses
        hamamatsu = root / f'H{slide[1:]}' / 'frames' / 'x40' / f'H{slide[1:]}_00Aa.tiff'
        hamamatsu.parent.mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(hamamatsu, noise_image(rng, 20, 30), photometric='rgb')
    return truth


# ----------------------------------------------------------------------- CRCHisto
def make_crchisto(root, n_images=12, size=(400, 360), seed=0):
    """CRCHistoPhenotypes: ``imgN/imgN.bmp`` + ``imgN_detection.mat`` (1-based x, y).

    Quirks: RGBA BMPs (every third image), empty detections of shape (0, 0) and (0, 2),
    sub-pixel coordinates, points on all borders (including 1-based 0.7, i.e. half a
    pixel left of the first column), a Classification folder.

    Returns:
        ``{source: (N, 2) 0-based x, y}`` (``source`` relative to ``root``).
    """
    rng = np.random.default_rng(seed)
    width, height = size
    root = Path(root)
    detection = root / 'CRCHistoPhenotypes_2016_04_28' / 'Detection'
    truth = {}
    for i in range(1, n_images + 1):
        folder = detection / f'img{i}'
        folder.mkdir(parents=True)
        if i == 2:
            matlab = np.zeros((0, 0))
        elif i == 3:
            matlab = np.zeros((0, 2))
        else:
            n = int(rng.integers(8, 20))
            matlab = np.stack([rng.uniform(1, width, n), rng.uniform(1, height, n)], 1)
            matlab[:3] = np.round(matlab[:3])  # integer coordinates as well
            if i == 1:
                matlab = np.concatenate([matlab, [[1, 1], [width, height], [0.7, 10.2],
                                                  [width - 0.2, 5]]])
        points = matlab.reshape(-1, 2) - 1
        points[points < 0] = 0
        image = paint(noise_image(rng, height, width), points)
        if i % 3 == 0:
            alpha = np.full((height, width, 1), 255, np.uint8)
            write_bmp_rgba(folder / f'img{i}.bmp', np.concatenate([image, alpha], 2))
        else:
            Image.fromarray(image).save(folder / f'img{i}.bmp')
        scipy.io.savemat(folder / f'img{i}_detection.mat', {'detection': matlab})
        truth[(folder / f'img{i}.bmp').relative_to(root).as_posix()] = points
        classification = root / 'CRCHistoPhenotypes_2016_04_28' / 'Classification'
        (classification / f'img{i}').mkdir(parents=True)
        scipy.io.savemat(classification / f'img{i}' / f'img{i}_epithelial.mat',
                         {'detection': matlab[:2]})
    return truth


CRC_CLASSES = ('epithelial', 'fibroblast', 'inflammatory', 'others')


def make_crchisto_classes(root, layout='official', n_images=6, size=(400, 360), seed=1):
    """CRCHistoPhenotypes with its classification files, in the official layout
    (``Detection/imgN`` + ``Classification/imgN``) or the split folders of a public copy
    (``cls_and_det/{train,validation,test}/imgN`` holding everything, with the other BMPs
    of that copy, which are not the image).

    Per image: nuclei at least 20 px apart; each gets a class 1..4 or none (0). A
    classified point lies on its nucleus or up to 4 px off it (the raw files do both);
    image 1 also has a classified point 30 px from every nucleus (a nucleus of its own)
    and a detected point 0.85 px above the image (clipped onto the first row).

    Returns:
        ``{source: (points (N, 2) 0-based, labels (N,) 1..4 with 4 for the unclassified,
        unclassified (N,) bool)}``: the detected nuclei, then the classified-only ones.
    """
    rng = np.random.default_rng(seed)
    width, height = size
    root = Path(root)
    truth = {}
    split_of = ('train', 'validation', 'test')
    for i in range(1, n_images + 1):
        name = f'img{i}'
        if layout == 'official':
            folder = root / 'CRCHistoPhenotypes_2016_04_28' / 'Detection' / name
            class_folder = root / 'CRCHistoPhenotypes_2016_04_28' / 'Classification' / name
        else:
            folder = root / 'cls_and_det' / split_of[i % 3] / name
            class_folder = folder
        folder.mkdir(parents=True)
        class_folder.mkdir(parents=True, exist_ok=True)
        nuclei = _spread_points(rng, int(rng.integers(6, 12)), width, height,
                                min_dist=20, margin=15).astype(np.float64)
        classes = rng.integers(0, 5, len(nuclei))
        classes[:5] = [1, 2, 3, 4, 0]  # every class and an unclassified nucleus
        offsets = np.zeros_like(nuclei)
        offsets[1] = [3.0, -2.5]  # a classified point off its nucleus, within 6 px
        detected = nuclei.copy()
        alone = np.zeros((0, 2))
        if i == 1:
            detected = np.concatenate([detected, [[50.0, -0.85]]])
            classes = np.concatenate([classes, [0]])
            offsets = np.concatenate([offsets, [[0.0, 0.0]]])
            alone = _spread_points(rng, 1, width, height, avoid=detected, min_dist=30,
                                   margin=15).astype(np.float64)
        image = paint(noise_image(rng, height, width), detected.clip(0))
        Image.fromarray(image).save(folder / f'{name}.bmp')
        if layout != 'official':
            for other in ('original', 'classification', 'detection', 'verify_cls'):
                Image.fromarray(noise_image(rng, height, width)).save(
                    folder / f'{name}_{other}.bmp')
        scipy.io.savemat(folder / f'{name}_detection.mat', {'detection': detected + 1})
        for c, cls in enumerate(CRC_CLASSES, start=1):
            points = detected[classes == c] + offsets[classes == c]
            if c == 2:
                points = np.concatenate([points, alone])
            scipy.io.savemat(class_folder / f'{name}_{cls}.mat',
                             {'detection': (points + 1) if len(points) else np.zeros((0, 0))})
        source_folder = folder.relative_to(root).as_posix()
        unclassified = np.concatenate([classes == 0, np.zeros(len(alone), bool)])
        labels = np.concatenate([np.where(classes == 0, 4, classes), np.full(len(alone), 2)])
        truth[f'{source_folder}/{name}.bmp'] = (
            np.concatenate([detected.clip(0), alone]), labels, unclassified)
    return truth


# ------------------------------------------------------------------------- TUPAC16
def _spread_points(rng, n, width, height, avoid=(), min_dist=80, margin=40):
    """``n`` integer points at least ``min_dist`` from each other and from ``avoid``."""
    points = [tuple(p) for p in avoid]
    new = []
    while len(new) < n:
        p = (int(rng.integers(margin, width - margin)),
             int(rng.integers(margin, height - margin)))
        if all(np.hypot(p[0] - q[0], p[1] - q[1]) >= min_dist for q in points):
            points.append(p)
            new.append(p)
    return np.asarray(new, dtype=np.int64).reshape(-1, 2)


def make_tupac(root, size=(1100, 900), seed=0):
    """TUPAC16 auxiliary cases 01-24 (24 lies outside the paper's first centre).

    Cases spread over ``mitoses_image_data_part_1``, ``mitoses_train_image_data_part_2``
    and ``mitoses_image_data_part_3``; cases 01-03 have two tiles. Labels are
    ``row,col``; some tiles have no original CSV at all; the alternative labels hold the
    original ones shifted by up to 3 px (matched), plus extra mitoses; a few original
    labels are missing from the alternative set.

    Returns:
        ``{source: dict(alternative=(N, 2) x/y, in_original=(N,) bool,
        original=(M, 2) x/y)}`` for cases 01-23.
    """
    rng = np.random.default_rng(seed)
    width, height = size
    root = Path(root)
    truth = {}
    for c in range(1, 25):
        case = f'{c:02d}'
        part = ('mitoses_image_data_part_1' if c <= 8 else
                'mitoses_train_image_data_part_2' if c <= 16 else
                'mitoses_image_data_part_3')
        for t in range(1, 3 if c <= 3 else 2):
            tile = f'{t:02d}'
            n_orig = 0 if c in (5, 6) else int(rng.integers(1, 4))
            original = _spread_points(rng, n_orig, width, height)
            if c == 1 and t == 1:
                original = np.concatenate([original, [[0, 0], [width - 1, height - 1]]])
            kept = original[1:] if c == 7 else original  # one label dropped in case 07
            shift = rng.integers(-3, 4, kept.shape)
            extra = _spread_points(rng, 2, width, height, avoid=original)
            alternative = np.concatenate([np.clip(kept + shift, 0, [width - 1, height - 1]),
                                          extra])
            in_original = np.r_[np.ones(len(kept), bool), np.zeros(len(extra), bool)]
            image = paint(noise_image(rng, height, width),
                          np.concatenate([original, alternative]))
            tif = root / part / case / f'{tile}.tif'
            tif.parent.mkdir(parents=True, exist_ok=True)
            if c % 2:
                tifffile.imwrite(tif, image, photometric='rgb', tile=(256, 256),
                                 compression='zlib', compressionargs=dict(level=1))
            else:
                tifffile.imwrite(tif, image, photometric='rgb', rowsperstrip=32)
            if len(original) or c == 6:  # case 06 has a 0-byte CSV, 05 none at all
                _write_lines(root / 'mitoses_ground_truth' / case / f'{tile}.csv',
                             original[:, ::-1].tolist())
            _write_lines(root / 'TUPAC_AL' / 'mitoses_ground_truth' / case / f'{tile}.csv',
                         alternative[:, ::-1].tolist())
            _write_lines(root / 'TUPAC_AL' / 'nonmitoses_ground_truth' / case /
                         f'{tile}.csv', [(5, 7)])
            if c <= 23:
                truth[tif.relative_to(root).as_posix()] = dict(
                    alternative=alternative.astype(float), in_original=in_original,
                    original=original.astype(float))
    return truth


# --------------------------------------------------------------------------- NuCLS
NUCLS_ROWS = (  # raw, main, super class of the corrected single-rater set
    ('tumor', 'tumor_nonMitotic', 'tumor_any'),
    ('mitotic_figure', 'tumor_mitotic', 'tumor_any'),
    ('lymphocyte', 'lymphocyte', 'sTIL'),
    ('plasma_cell', 'plasma_cell', 'sTIL'),
    ('fibroblast', 'fibroblast', 'nonTIL_stromal'),
    ('macrophage', 'macrophage', 'nonTIL_stromal'),
    ('vascular_endothelium', 'vascular_endothelium', 'nonTIL_stromal'),
    ('apoptotic_body', 'apoptotic_body', 'other_nucleus'),
    ('unlabeled', 'AMBIGUOUS', 'AMBIGUOUS'),
)
NUCLS_CLASSES = {'tumor_any': 'tumor', 'sTIL': 'lymphocyte', 'nonTIL_stromal': 'stromal'}


def nucls_fov_name(slide, i, rng):
    hexid = ''.join(rng.choice(list('0123456789abcdef'), 24))
    return (f'{slide}_id-{hexid}_left-{1000 * i}_top-{2000 + i}_bottom-{2300 + i}'
            f'_right-{1000 * i + 310}')


def write_nucls_csv(path, rows, raw_column='raw_classification', index_column=True):
    """A pandas-style FOV CSV (optional leading unnamed index column)."""
    header = [raw_column, 'main_classification', 'super_classification', 'type',
              'xmin', 'ymin', 'xmax', 'ymax', 'coords_x', 'coords_y']
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w', newline='') as f:
        writer = csv.writer(f)
        writer.writerow([''] + header if index_column else header)
        for i, row in enumerate(rows):
            writer.writerow([i] + list(row) if index_column else list(row))


def make_nucls(root, n_slides=7, fovs_per_slide=2, nested_rgb=True, seed=0):
    """NuCLS corrected single-rater: ``rgb/rgb/<fov>.png`` (nested) + ``csv/<fov>.csv``.

    Quirks: nested ``rgb/rgb/``, a leading unnamed index column (every other file), the
    older ``group`` column (slide 2), polylines with quoted comma-separated coords,
    boxes crossing the image border, other_nucleus / AMBIGUOUS rows, a FOV without any
    cell of interest, mask/visualization/train_test_splits folders.

    Returns:
        ``{source: [(category name, [x, y, w, h] clipped, raw class), ...]}``.
    """
    rng = np.random.default_rng(seed)
    root = Path(root)
    rgb = root / 'rgb' / 'rgb' if nested_rgb else root / 'rgb'
    truth = {}
    k = 0
    for s in range(n_slides):
        slide = f'TCGA-A{s}-A0SX-DX1'
        for i in range(fovs_per_slide):
            k += 1
            name = nucls_fov_name(slide, k, rng)
            width, height = int(rng.integers(250, 400)), int(rng.integers(250, 400))
            if width == height:
                width += 1
            rows, expected = [], []
            choices = NUCLS_ROWS[-2:] if k == 3 else NUCLS_ROWS
            for j in range(int(rng.integers(5, 12))):
                raw, main, sup = choices[j % len(choices)]
                x1, y1 = int(rng.integers(-5, width - 10)), int(rng.integers(-5, height - 10))
                x2, y2 = x1 + int(rng.integers(6, 30)), y1 + int(rng.integers(6, 30))
                kind = 'polyline' if j % 2 else 'rectangle'
                coords_x = ','.join(map(str, [x1, x2, x2, x1, x1]))
                coords_y = ','.join(map(str, [y1, y1, y2, y2, y1]))
                rows.append((raw, main, sup, kind, x1, y1, x2, y2, coords_x, coords_y))
                if sup in NUCLS_CLASSES:
                    cx1, cy1 = max(x1, 0), max(y1, 0)
                    cx2, cy2 = min(x2, width), min(y2, height)
                    box = [float(v) for v in (cx1, cy1, cx2 - cx1, cy2 - cy1)]
                    expected.append((NUCLS_CLASSES[sup], box, raw))
            png = rgb / f'{name}.png'
            png.parent.mkdir(parents=True, exist_ok=True)
            image = noise_image(rng, height, width)
            Image.fromarray(image).save(png)
            write_nucls_csv(root / 'csv' / f'{name}.csv', rows,
                            raw_column='group' if s == 2 else 'raw_classification',
                            index_column=bool(k % 2))
            for extra in ('mask', 'visualization'):
                (root / extra).mkdir(exist_ok=True)
                Image.fromarray(image[..., 0]).save(root / extra / f'{name}.png')
            truth[png.relative_to(root).as_posix()] = expected
    splits = root / 'train_test_splits'
    splits.mkdir()
    (splits / 'fold_1_train.csv').write_text(',slide_name,hospital,type,fold\n'
                                             '0,TCGA-A0-A0SX-DX1,A0,train,1\n')
    return truth


# ------------------------------------------------------------------ reading outputs
def run_prepare(dataset, src, out, *options):
    """``python data_prep/prepare.py <dataset> --src SRC --out OUT [options]``, in-process."""
    from data_prep.prepare import main
    return main([dataset, '--src', str(src), '--out', str(out), '--no-progress',
                 *map(str, options)])


def load_coco(out, split, fold=0):
    """``(images by id, annotations, category names)`` of one written annotation file."""
    import json
    coco = json.loads((Path(out) / 'annotations' / f'fold{fold}' / f'{split}.json')
                      .read_text())
    return ({im['id']: im for im in coco['images']}, coco['annotations'],
            [c['name'] for c in coco['categories']])


def read_png(out, file_name):
    """RGB pixels of a written image (``file_name`` relative to ``OUT/images``)."""
    return np.asarray(Image.open(Path(out) / 'images' / file_name).convert('RGB'))


def tree_state(root):
    """``{relative path: (size, mtime_ns)}`` of every file below ``root``."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob('*') if p.is_file()}


def config_datasets(name, out):
    """The train/val/test datasets of ``configs/_base_/datasets/<name>.py`` on ``out``."""
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    import mmdet_pu  # noqa: F401  (registers CellCocoDataset)
    from mmdet.registry import DATASETS
    init_default_scope('mmdet')
    repo = Path(__file__).resolve().parents[2]
    cfg = Config.fromfile(str(repo / 'configs' / '_base_' / 'datasets' / f'{name}.py'))
    datasets = {}
    for split in ('train', 'val', 'test'):
        dataset_cfg = cfg[f'{split}_dataloader'].dataset
        dataset_cfg.data_root = f'{out}/'
        datasets[split] = DATASETS.build(dataset_cfg)
    return cfg, datasets
