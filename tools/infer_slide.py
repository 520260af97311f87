"""Detect the cells of whole slides and export them to QuPath: one slide, a folder or a
cohort, in one process or sharded over many (torchrun, Slurm), resumable.

Usage::

    python tools/infer_slide.py CONFIG CHECKPOINT SLIDES --out OUT_DIR
        [--target-mpp UM] [--level L] [--roi x,y,w,h] [--frame bounds|level0]
        [--tile T] [--overlap O] [--batch-size N] [--score-thr S|val] [--nms-iou IOU]
        [--tta] [--device cpu|cuda]
        [--no-tissue-mask | --tissue-downsample D --tissue-saturation S
         --tissue-od OD --tissue-dilate PX] [--overwrite] [--no-progress]
        [--launcher none|pytorch|slurm] [--cfg-options k=v ...]
    tools/dist_infer_slide.sh CONFIG CHECKPOINT SLIDES NPROC --out OUT_DIR [options]
    [GPUS=16] tools/slurm_infer_slide.sh PARTITION JOB CONFIG CHECKPOINT SLIDES OUT_DIR
        [options]

SLIDES is a slide (.svs, .tif, .ndpi, .mrxs, ... through OpenSlide; TIFFs it cannot
open through tifffile; small .png/.jpg through PIL), a directory of them or a .txt list
of slide paths. For each slide OUT_DIR gets ``<stem>.geojson`` (QuPath detections: class
name and colour of the config's metainfo, a ``score`` measurement; *File > Import
objects from file*) and ``<stem>.csv`` (``x,y,class,score`` of the cell centres), both
in QuPath's pixel coordinates of the whole slide, like ``--roi`` (level 0; on slides
with ``openslide.bounds-*``, such as MIRAX, counted from the bounds' corner as QuPath
does; ``--frame level0`` for a slide QuPath opened with Bio-Formats), and
``manifest.csv`` gets a row per slide (status, cells per class, tissue area, cells per
mm^2, seconds, error). Each slide is read at the pyramid level closest to the model's
training resolution (the checkpoint's ``dataset_meta.mpp``, else the config's
``metainfo.mpp``; ``--target-mpp`` overrides) and resampled to it. A rerun skips the
slides finished with the same settings (``--overwrite`` recomputes them); a slide that
fails (an unreadable file, an ``--roi`` outside QuPath's image, ...) is recorded and the
others go on. ``--tile`` and ``--nms-iou`` default to the config's ``TiledTestLoop``
settings, ``--score-thr`` to the config's test threshold (``test_evaluator.score_thr``:
0.5 in the shipped configs, or ``'val'``; ``--score-thr val``: the validation's, read as
``tools/test.py --score-thr val`` reads it). ``--tta`` adds test-time flips as
``tools/test.py --tta`` does (four times the inference; a config whose test loop sets
``flips`` has them without it). The pipeline: docs/slides.md.

Exit status: 0 when every slide is done, 3 when some failed (manifest.csv names them;
process 0 only), 2 for bad input (``infer_slide.py: error: <message>``).
"""
import argparse
import sys

from mmengine.config import DictAction

from cellio.cli import int_at_least, parse_roi, positive_float, score_thr_or_val
from mmdet_pu.apis.cohort import run_cohort
from mmdet_pu.apis.cohort_plan import find_cohort
from mmdet_pu.apis.cohort_settings import FRAMES, model_settings, run_identity
from mmdet_pu.apis.slide_model import init_slide_model
from mmdet_pu.apis.tissue import TissueMaskConfig
from mmdet_pu.engine.launch import close_distributed, init_distributed
from mmdet_pu.engine.runner.test_flips import TTA_FLIPS
from mmdet_pu.evaluation.validation_thr import detector_score_thr

#: Exit status when some slides failed.
EXIT_FAILED = 3


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='infer_slide.py', description='Detect cells on whole slides, export to QuPath',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('config', help='config file of the model')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('slides', help='a slide file, a directory of slides or a .txt list')
    parser.add_argument('--out', required=True, help='output directory')
    parser.add_argument(
        '--target-mpp', type=positive_float,
        help="micrometres per pixel the model sees (default: its training resolution: the "
        "checkpoint's dataset_meta.mpp, else the config's metainfo.mpp)")
    parser.add_argument(
        '--level', type=int_at_least(0),
        help='pyramid level to read (default: the one closest to the target resolution)')
    parser.add_argument('--roi', type=parse_roi,
                        help="region x,y,w,h in QuPath's pixel coordinates (level 0; "
                        'default: whole slide)')
    parser.add_argument('--frame', choices=FRAMES, default='bounds',
                        help="QuPath's frame of --roi and the outputs: level 0 less "
                        'openslide.bounds-x/y when the slide has them (default; QuPath\'s '
                        'OpenSlide reader) or level 0 (QuPath opened it with Bio-Formats)')
    parser.add_argument('--tile', type=int_at_least(1),
                        help="tile side in pixels of the model's input (default: the "
                        "config's TiledTestLoop tile_size, else 512)")
    parser.add_argument('--overlap', type=int_at_least(0), default=64,
                        help='tile overlap in pixels of the model\'s input, more than the '
                        'largest cell (default 64)')
    parser.add_argument('--batch-size', type=int_at_least(1), default=8,
                        help='tiles per forward pass (default 8)')
    parser.add_argument('--score-thr', type=score_thr_or_val,
                        help="minimum score of a detection, or 'val' for the one the "
                        "model's validation selected (default: the config's test "
                        'threshold, test_evaluator.score_thr, as tools/test.py; 0.5 in '
                        'the shipped configs and the fit\'s fused detector)')
    parser.add_argument('--nms-iou', type=float,
                        help="IoU of the NMS across tile borders (default: the config's)")
    parser.add_argument('--tta', action='store_true',
                        help='test-time flips: fuse the detections of every tile as is '
                        'and mirrored in three directions (as tools/test.py --tta)')
    parser.add_argument('--device', help='cpu or cuda (default: cuda when available; '
                        "each process of a distributed run takes its LOCAL_RANK's GPU)")
    tissue = parser.add_argument_group('tissue mask (docs/slides.md)')
    tissue.add_argument('--no-tissue-mask', action='store_true',
                        help='run every tile, also on background')
    defaults = TissueMaskConfig()
    tissue.add_argument('--tissue-downsample', type=float, default=defaults.downsample,
                        help='level-0 pixels per mask pixel (default %(default)s)')
    tissue.add_argument('--tissue-saturation', type=float, default=defaults.saturation,
                        help='minimum saturation of tissue (default %(default)s)')
    tissue.add_argument('--tissue-od', type=float, default=defaults.optical_density,
                        help='minimum optical density of tissue (default %(default)s)')
    tissue.add_argument('--tissue-dilate', type=float, default=defaults.dilate,
                        help='dilation of the tissue in level-0 pixels (default '
                        '%(default)s)')
    cohort = parser.add_argument_group('cohort (docs/slides.md)')
    cohort.add_argument('--overwrite', action='store_true',
                        help='recompute the slides already finished in OUT_DIR')
    cohort.add_argument('--no-progress', action='store_true', help='no progress bars')
    cohort.add_argument('--launcher', choices=('none', 'pytorch', 'slurm'), default='none',
                        help='how the processes were started (tools/dist_infer_slide.sh '
                        'and tools/slurm_infer_slide.sh set it)')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override config settings, e.g. '
                        'model.test_cfg.rcnn.max_per_img=600')
    return parser, parser.parse_args(argv)


def main(argv=None):
    parser, args = parse_args(argv)
    try:
        tissue = None if args.no_tissue_mask else TissueMaskConfig(
            args.tissue_downsample, args.tissue_saturation, args.tissue_od,
            args.tissue_dilate)
        slides = find_cohort(args.slides)
        rank, _ = init_distributed(args.launcher)
        model = init_slide_model(args.config, args.checkpoint, args.device, args.cfg_options)
        settings = model_settings(
            model, args.checkpoint, target_mpp=args.target_mpp, tile_size=args.tile,
            nms_iou=args.nms_iou, flips=TTA_FLIPS if args.tta else None, roi=args.roi,
            frame=args.frame, level=args.level, overlap=args.overlap,
            batch_size=args.batch_size,
            score_thr=detector_score_thr(model.cfg, args.checkpoint, args.score_thr),
            tissue=tissue)
        summary = run_cohort(model, slides, args.out, settings,
                             run_identity(args.config, args.checkpoint, args.cfg_options),
                             overwrite=args.overwrite, progress=not args.no_progress)
    except (ValueError, OSError) as err:
        parser.error(str(err))
    finally:
        close_distributed()
    if rank == 0:
        print(summary.describe(), flush=True)
        if summary.failed:
            print(f'failed: {", ".join(summary.failed)} (errors in {summary.manifest})',
                  file=sys.stderr, flush=True)
            sys.exit(EXIT_FAILED)


if __name__ == '__main__':
    main()
