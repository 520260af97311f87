"""Converters from the raw cell-detection datasets to tiled COCO files.

Command-line tools:

* ``prepare`` -- ``python data_prep/prepare.py <dataset> --src RAW --out OUT``: convert
  one dataset to the layout of docs/design.md (images, ``annotations/fold<k>/*.json``,
  ``splits.json``); see docs/datasets.md.
* ``delete`` -- ``python data_prep/delete.py ANN_JSON --scheme NAME --out OUT``: export
  the incomplete annotations a deletion scheme (``configs/_base_/deletion/``) leaves.

Dataset converters (each ``add_arguments(parser)`` + ``prepare(args)``):

* ``mitos14`` -- MITOS-ATYPIA-14 Aperio x40 frames, mitosis points with agreement score;
* ``crchisto`` -- CRCHistoPhenotypes nuclei, 1-based MATLAB points;
* ``tupac`` -- TUPAC16 auxiliary cases 01-23, alternative labels flagged ``original``;
* ``nucls`` -- NuCLS corrected single-rater boxes, tumor / lymphocyte / stromal;
* ``synthetic`` -- generated H&E-like images (no raw data needed).

Shared building blocks:

* ``writer`` -- :class:`~data_prep.writer.SourceImage` (what a converter yields) and
  :func:`~data_prep.writer.write_from_args` (tiling, PNGs, COCO files of every fold);
* ``points`` -- numeric point CSVs with line numbers, range checks;
* ``splits`` -- seeded 4:1:1 splits by group, folds with a fixed validation set;
* ``coco_io`` -- the COCO builder.

Pixels, tiling geometry and atomic output come from the package: image and slide
readers (:mod:`cellio.images`, :mod:`cellio.slides`), tile grids and the cells
of each tile (:mod:`cellio.tiling`), atomic files and directories
(:mod:`cellio.atomic`).
"""
