"""Synthetic H&E-like cell images with complete annotations (dataset ``synthetic``).

Images are composed in optical density, as brightfield stains absorb light
(Beer-Lambert): ``RGB = 255 * exp(-(H * h + E * e))`` with hematoxylin (``h``, purple,
nuclei) and eosin (``e``, pink, stroma) stain vectors after Ruifrok & Johnston (2001).

* stroma: eosin with low-frequency density variation, oriented fibres and pale gaps;
* nuclei: hematoxylin polygons (smooth random radial profile) with chromatin texture;
* per image: perturbed stain vectors and concentrations, defocus blur, camera noise.

Variants:

``binary``  one annotated type, ``mitosis``: large (16-23 px), very dark, irregular
            clumped nuclei in a pale halo; among them, NOT annotated, look-alike
            distractors: ordinary oval nuclei (12-20 px, paler) and small dark round
            lymphocyte-like nuclei (9-13 px). About 8-20 mitoses per 256 x 256 tile, so
            keep-1-per-patch deletion removes most annotations. Each mitosis has a
            ``score`` in [0.5, 1] that grows with its darkness (a stand-in for the MITOS
            pathologist agreement of the ``keep1_agreement`` scheme).
``multi``   three annotated types: ``tumor`` (large pale irregular nuclei with a
            nucleolus, 18-26 px), ``lymphocyte`` (small dark round, 9-13 px) and
            ``stromal`` (elongated spindles along the fibres, 20-30 x 5-8 px).
``nuclei``  one annotated type, ``nucleus``: every ordinary oval nucleus (12-20 px),
            densely packed (35-55 per 256 x 256 tile), as in nucleus detection; no
            look-alikes unless ``--lookalikes`` adds the binary variant's.

The family of synthetic regimes (docs/experiments.md) varies one look at a time:
``--cells-per-tile LO HI`` (density of the annotated type), ``--cell-size LO HI`` (its
diameter in pixels; nuclei are spaced further apart above 23 px) and ``--lookalikes F``
(the number of unannotated look-alike nuclei, times F). Without them each variant is
generated exactly as before.

Every image is generated from ``(seed, index)`` alone, so the dataset is deterministic
and does not depend on ``--num-images``. Whole images (``--size``, default 512) are split
4:1:1 by image (one fold) and tiled by the shared writer (``--tile 256 --overlap 0``).
The images are taken to be at :data:`MPP` = 0.5 µm per pixel (a 20x scan: nuclei of
9-26 px are 4.5-13 µm, the size of real ones), recorded as ``mpp`` on every image entry.

    python data_prep/prepare.py synthetic --out data/synthetic_binary --variant binary
"""
from dataclasses import dataclass, replace

import cv2
import numpy as np

from data_prep.splits import split_groups
from data_prep.writer import SourceImage, add_common_arguments, write_from_args
from cellio.images import ArrayReader

#: Ruifrok & Johnston optical density vectors (R, G, B).
HEMATOXYLIN = np.array([0.650, 0.704, 0.286])
EOSIN = np.array([0.072, 0.990, 0.105])

CATEGORIES = dict(binary=['mitosis'], multi=['tumor', 'lymphocyte', 'stromal'],
                  nuclei=['nucleus'])
#: Micrometres per pixel the synthetic images stand for (module doc).
MPP = 0.5


@dataclass(frozen=True)
class NucleusType:
    """How one kind of nucleus is drawn.

    Diameters in pixels (``aspect`` = minor / major axis), ``density`` = hematoxylin
    concentration, ``texture`` = relative chromatin modulation, ``irregularity`` =
    amplitude of the random radial profile and ``harmonics`` its angular frequencies.
    ``label`` is the category id (0 = not annotated), ``per_tile`` the mean count per
    256 x 256 area.
    """
    label: int
    per_tile: tuple
    diameter: tuple
    aspect: tuple
    density: tuple
    texture: float
    irregularity: float
    harmonics: tuple = (2, 5)
    halo: float = 0.0
    nucleolus: bool = False
    along_fibres: bool = False


NUCLEUS_TYPES = dict(
    binary=[
        NucleusType(label=1, per_tile=(8, 20), diameter=(16, 23), aspect=(0.75, 1.0),
                    density=(1.7, 2.4), texture=0.45, irregularity=0.22,
                    harmonics=(3, 9), halo=0.55),
        NucleusType(label=0, per_tile=(8, 14), diameter=(12, 20), aspect=(0.6, 0.9),
                    density=(0.8, 1.3), texture=0.3, irregularity=0.08),
        NucleusType(label=0, per_tile=(3, 7), diameter=(9, 13), aspect=(0.85, 1.0),
                    density=(1.4, 1.9), texture=0.1, irregularity=0.04),
    ],
    multi=[
        NucleusType(label=1, per_tile=(5, 10), diameter=(18, 26), aspect=(0.65, 0.95),
                    density=(0.55, 0.8), texture=0.45, irregularity=0.12,
                    nucleolus=True),
        NucleusType(label=2, per_tile=(4, 10), diameter=(9, 13), aspect=(0.85, 1.0),
                    density=(1.5, 2.0), texture=0.1, irregularity=0.04),
        NucleusType(label=3, per_tile=(3, 7), diameter=(20, 30), aspect=(0.2, 0.3),
                    density=(0.9, 1.3), texture=0.2, irregularity=0.05,
                    along_fibres=True),
    ],
)

SLOT_SPACING = 26  # jittered-grid spacing of nucleus centres, keeps nuclei apart
VERTICES = 24      # polygon vertices per nucleus
LOOKALIKES = NUCLEUS_TYPES['binary'][1:]
NUCLEUS_TYPES['nuclei'] = [replace(LOOKALIKES[0], label=1, per_tile=(35, 55))]


def nucleus_types(variant='binary', cells_per_tile=None, cell_size=None, lookalikes=None):
    """The nucleus types of ``variant`` with the look of one synthetic regime.

    Args:
        variant: ``binary``, ``multi`` or ``nuclei``.
        cells_per_tile: ``(low, high)`` mean count of the annotated type per 256 x 256
            area (one annotated type only); None keeps the variant's.
        cell_size: ``(low, high)`` diameter of the annotated type in pixels (one
            annotated type only); None keeps the variant's.
        lookalikes: factor on the count of every unannotated type; the ``nuclei``
            variant gets the binary variant's look-alikes. None keeps the variant's.
    """
    if variant not in NUCLEUS_TYPES:
        raise ValueError(f'unknown synthetic variant {variant!r}; expected one of '
                         f'{sorted(NUCLEUS_TYPES)}')
    kinds = list(NUCLEUS_TYPES[variant])
    annotated = [i for i, kind in enumerate(kinds) if kind.label]
    for name, value in (('cells_per_tile', cells_per_tile), ('cell_size', cell_size)):
        if value is None:
            continue
        low, high = value
        if len(annotated) != 1:
            raise ValueError(f'{name}: the {variant} variant has {len(annotated)} '
                             'annotated types; the option needs exactly one')
        if not 0 < low <= high:
            raise ValueError(f'{name}: expected 0 < low <= high, got {low} {high}')
        field = 'per_tile' if name == 'cells_per_tile' else 'diameter'
        kinds[annotated[0]] = replace(kinds[annotated[0]], **{field: (low, high)})
    if lookalikes is not None:
        if lookalikes < 0:
            raise ValueError(f'lookalikes: expected a factor >= 0, got {lookalikes}')
        if variant == 'nuclei':
            kinds += LOOKALIKES
        kinds = [kind if kind.label else replace(
            kind, per_tile=tuple(lookalikes * n for n in kind.per_tile)) for kind in kinds]
    return kinds


def slot_spacing(kinds):
    """Spacing of the centre grid: :data:`SLOT_SPACING`, or 1.15 times the largest
    nucleus when its area-equivalent diameter (major axis times the square root of the
    aspect ratio) exceeds it."""
    largest = max(kind.diameter[1] * np.sqrt(kind.aspect[1]) for kind in kinds)
    return SLOT_SPACING if largest <= SLOT_SPACING else int(np.ceil(1.15 * largest))


def _smooth_noise(rng, size, scale):
    """Unit-variance noise with features ``scale`` pixels wide (upsampled coarse noise)."""
    coarse = max(2, int(np.ceil(size / scale)) + 1)
    field = cv2.resize(rng.standard_normal((coarse, coarse)).astype(np.float32),
                       (size, size), interpolation=cv2.INTER_CUBIC)
    return field / (field.std() + 1e-6)


def _fibres(rng, size, angle):
    """Unit-variance noise streaked along ``angle`` (radians): stromal collagen fibres."""
    length = 31
    kernel = np.zeros((length, length), np.float32)
    c = length // 2
    dx, dy = np.cos(angle) * c, np.sin(angle) * c
    cv2.line(kernel, (int(round(c - dx)), int(round(c - dy))),
             (int(round(c + dx)), int(round(c + dy))), 1.0, 1)
    kernel /= kernel.sum()
    noise = cv2.GaussianBlur(rng.standard_normal((size, size)).astype(np.float32),
                             (0, 0), 1.2)
    field = cv2.filter2D(noise, -1, kernel)
    return field / (field.std() + 1e-6)


def _centres(rng, size, count, free, spacing=SLOT_SPACING):
    """Up to ``count`` nucleus centres on a jittered grid, only where ``free`` is True."""
    n = size // spacing
    grid = (np.arange(n) + 0.5) * (size / n)
    xs, ys = np.meshgrid(grid, grid)
    slots = np.stack([xs.ravel(), ys.ravel()], 1)
    slots += rng.uniform(-0.2, 0.2, slots.shape) * spacing
    slots = np.clip(slots, 0, size - 1)
    slots = slots[free[slots[:, 1].astype(int), slots[:, 0].astype(int)]]
    return slots[rng.permutation(len(slots))[:count]]


def _outlines(rng, centres, kind, fibre_angle):
    """(N, VERTICES, 2) float polygons of ``kind`` nuclei around ``centres``."""
    n = len(centres)
    theta = np.linspace(0, 2 * np.pi, VERTICES, endpoint=False)
    k = np.arange(kind.harmonics[0], kind.harmonics[1] + 1)
    amplitude = rng.uniform(0, 1, (n, len(k))) * kind.irregularity / np.sqrt(len(k))
    phase = rng.uniform(0, 2 * np.pi, (n, len(k)))
    radius = 1 + np.einsum('nk,nkv->nv', amplitude,
                           np.cos(k[None, :, None] * theta + phase[..., None]))
    major = rng.uniform(*kind.diameter, n)[:, None] / 2
    minor = major * rng.uniform(*kind.aspect, n)[:, None]
    if kind.along_fibres:
        rotation = fibre_angle + rng.normal(0, 0.25, n)
    else:
        rotation = rng.uniform(0, np.pi, n)
    x = radius * major * np.cos(theta)
    y = radius * minor * np.sin(theta)
    cos, sin = np.cos(rotation)[:, None], np.sin(rotation)[:, None]
    return np.stack([centres[:, :1] + cos * x - sin * y,
                     centres[:, 1:] + sin * x + cos * y], axis=2)


def generate_image(rng, size=512, variant='binary', kinds=None):
    """One synthetic image and its complete annotations.

    ``kinds`` (:func:`nucleus_types`) replaces the variant's nucleus types.

    Returns:
        ``(rgb, boxes, labels, scores)``: (size, size, 3) uint8 RGB image, (N, 4) tight
        boxes ``[x, y, w, h]`` of the annotated nuclei (clipped to the image), (N,)
        category ids and (N,) scores (``binary``: grows with darkness; ``multi``: 1).
    """
    kinds = nucleus_types(variant) if kinds is None else kinds
    fibre_angle = rng.uniform(0, np.pi)
    # Stroma: eosin density with coarse variation, fibres and pale gaps (lumen, fat).
    gaps = np.clip(3 * (_smooth_noise(rng, size, 96) - rng.uniform(1.1, 1.6)), 0, 1)
    eosin = (rng.uniform(0.35, 0.6) * (1 + 0.18 * _smooth_noise(rng, size, 48))
             * (1 + 0.2 * _fibres(rng, size, fibre_angle)))
    hema = np.zeros((size, size), np.float32)
    texture = np.zeros((size, size), np.float32)
    halo = np.zeros((size, size), np.float32)

    area_tiles = (size / 256) ** 2
    counts = [rng.poisson(rng.uniform(*kind.per_tile) * area_tiles) for kind in kinds]
    centres = _centres(rng, size, sum(counts), gaps < 0.5, slot_spacing(kinds))
    boxes, labels, scores = [], [], []
    start = 0
    for kind, count in zip(kinds, counts):
        own = centres[start:start + count]
        start += count
        outlines = _outlines(rng, own, kind, fibre_angle)
        densities = rng.uniform(*kind.density, len(own))
        for outline, centre, density in zip(outlines, own, densities):
            polygon = np.round(outline).astype(np.int32)
            if kind.halo:
                ring = np.round(centre + 1.6 * (outline - centre)).astype(np.int32)
                cv2.fillPoly(halo, [ring], kind.halo)
            cv2.fillPoly(hema, [polygon], float(density))
            cv2.fillPoly(texture, [polygon], kind.texture)
            if kind.nucleolus:
                spot = centre + rng.uniform(-2, 2, 2)
                cv2.circle(hema, tuple(int(v) for v in np.round(spot)),
                           int(rng.integers(1, 3)), float(density) + 0.9, -1)
            if kind.label:
                x1, y1 = np.clip(outline.min(0) - 0.5, 0, size)
                x2, y2 = np.clip(outline.max(0) + 0.5, 0, size)
                boxes.append([x1, y1, x2 - x1, y2 - y1])
                labels.append(kind.label)
                low, high = kind.density
                scores.append(0.5 + 0.5 * (density - low) / (high - low)
                              if variant == 'binary' else 1.0)

    # Chromatin: fine noise modulating the nuclear stain; soft nuclear borders.
    chromatin = cv2.GaussianBlur(rng.standard_normal((size, size)).astype(np.float32),
                                 (0, 0), 0.8)
    chromatin /= chromatin.std() + 1e-6
    hema = cv2.GaussianBlur(hema, (0, 0), 0.7) * np.clip(1 + texture * chromatin, 0.2, None)
    eosin = ((1 - gaps) * eosin + 0.04 * gaps) * (1 - cv2.GaussianBlur(halo, (0, 0), 2.0))
    hema += 0.06  # hematoxylin counterstain everywhere

    # Per-image stain variation, composition in optical density, defocus and noise.
    h_vec = HEMATOXYLIN + rng.normal(0, 0.04, 3)
    e_vec = EOSIN + rng.normal(0, 0.04, 3)
    h_vec /= np.linalg.norm(h_vec)
    e_vec /= np.linalg.norm(e_vec)
    density = (rng.uniform(0.85, 1.15) * hema[..., None] * h_vec.astype(np.float32)
               + rng.uniform(0.85, 1.15) * np.clip(eosin, 0, None)[..., None]
               * e_vec.astype(np.float32))
    rgb = 255 * np.exp(-density)
    rgb = cv2.GaussianBlur(rgb, (0, 0), rng.uniform(0.4, 1.0))
    rgb += rng.normal(0, 2.5, rgb.shape).astype(np.float32)
    rgb = np.clip(rgb, 0, 255).astype(np.uint8)
    return (rgb, np.asarray(boxes, np.float64).reshape(-1, 4),
            np.asarray(labels, np.int64), np.asarray(scores, np.float64))


def iter_images(variant, num_images, size, seed, kinds=None):
    """:class:`~data_prep.writer.SourceImage` for every generated image."""
    for index in range(num_images):
        rgb, boxes, labels, scores = generate_image(
            np.random.default_rng([seed, index]), size, variant, kinds)
        name = f'{variant}_{index:04d}.png'
        extra = dict(score=scores) if variant == 'binary' else {}
        yield SourceImage(source=name, group=name, reader=ArrayReader(rgb, name),
                          width=size, height=size, labels=labels, boxes=boxes,
                          extra=extra, mpp=MPP)


def add_arguments(parser):
    parser.add_argument('--variant', choices=sorted(NUCLEUS_TYPES), default='binary',
                        help='binary: mitosis-like cells among unannotated look-alikes; '
                             'multi: tumor / lymphocyte / stromal; nuclei: dense '
                             'nuclei (default binary)')
    parser.add_argument('--cells-per-tile', type=float, nargs=2, metavar=('LOW', 'HIGH'),
                        help='mean count of the annotated cells per 256 x 256 area '
                             '(binary: 8 20, nuclei: 35 55)')
    parser.add_argument('--cell-size', type=float, nargs=2, metavar=('LOW', 'HIGH'),
                        help='diameter of the annotated cells in pixels (binary: 16 23, '
                             'nuclei: 12 20)')
    parser.add_argument('--lookalikes', type=float, metavar='F',
                        help='unannotated look-alike nuclei, times F (default: the '
                             "variant's; 0 removes them)")
    parser.add_argument('--num-images', type=int, default=60,
                        help='number of whole images (default 60)')
    parser.add_argument('--size', type=int, default=512,
                        help='side of the whole images in pixels (default 512)')
    add_common_arguments(parser, tile=256, overlap=0, n_folds=1)


def prepare(args):
    if args.num_images < 4:
        raise ValueError(f'--num-images must be >= 4 for a 4:1:1 train/val/test split, got '
                         f'{args.num_images}')
    kinds = nucleus_types(args.variant, args.cells_per_tile, args.cell_size,
                          args.lookalikes)
    names = [f'{args.variant}_{i:04d}.png' for i in range(args.num_images)]
    splits = split_groups(names, ratios=(4, 1, 1), seed=args.seed, n_folds=args.n_folds)
    images = iter_images(args.variant, args.num_images, args.size, args.seed, kinds)
    return write_from_args(args, CATEGORIES[args.variant], images, splits,
                           total=args.num_images)
