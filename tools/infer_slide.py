"""Detect the cells of whole slides and export them to QuPath.

Usage::

    python tools/infer_slide.py CONFIG CHECKPOINT SLIDE_OR_DIR --out OUT_DIR
        [--roi x,y,w,h] [--frame bounds|level0] [--level 0] [--tile T] [--overlap O]
        [--batch-size N] [--score-thr S] [--nms-iou IOU] [--device cpu|cuda]
        [--no-tissue-mask | --tissue-downsample D --tissue-saturation S
         --tissue-od OD --tissue-dilate PX] [--cfg-options k=v ...]

SLIDE_OR_DIR is a slide (.svs, .tif, .ndpi, .mrxs, ... through OpenSlide; TIFFs it
cannot open through tifffile; small .png/.jpg through PIL) or a directory of them. For
each slide OUT_DIR gets ``<stem>.geojson`` (QuPath detections: class name and colour
of the config's metainfo, a ``score`` measurement; *File > Import objects from file*)
and ``<stem>.csv`` (``x,y,class,score`` of the cell centres), both in QuPath's pixel
coordinates of the whole slide (level 0; on slides with ``openslide.bounds-*``, such as
MIRAX, counted from the bounds' corner as QuPath does; ``--frame level0`` for a slide
QuPath opened with Bio-Formats), like ``--roi``, and a summary line is printed.
``--tile`` and ``--nms-iou`` default to the config's ``TiledTestLoop`` settings. The
pipeline: docs/slides.md. Errors in the input are reported as ``infer_slide.py: error:
<message>`` with exit status 2.
"""
import argparse

from mmengine.config import DictAction

from mmdet_pu.apis.slide import (check_roi, infer_slide, init_slide_model, slide_defaults,
                                 write_slide_outputs)
from mmdet_pu.io.slides import find_slides, open_slide
from mmdet_pu.apis.tissue import TissueMaskConfig


def parse_roi(text):
    """``'x,y,w,h'`` -> a tuple of four ints (QuPath's level-0 pixels)."""
    try:
        x, y, w, h = (int(v) for v in text.split(','))
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected x,y,w,h (four integers), got {text!r}')
    if w <= 0 or h <= 0 or x < 0 or y < 0:
        raise argparse.ArgumentTypeError(f'expected x, y >= 0 and w, h > 0, got {text!r}')
    return x, y, w, h


def int_at_least(minimum):
    """argparse type: an integer >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected an integer, got {text!r}')
        if value < minimum:
            raise argparse.ArgumentTypeError(f'expected an integer >= {minimum}, got {value}')
        return value
    return parse


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='infer_slide.py', description='Detect cells on whole slides, export to QuPath',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('config', help='config file of the model')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('slides', help='a slide file or a directory of slides')
    parser.add_argument('--out', required=True, help='output directory')
    parser.add_argument('--roi', type=parse_roi,
                        help="region x,y,w,h in QuPath's pixel coordinates (level 0; "
                        'default: whole slide)')
    parser.add_argument('--frame', choices=('bounds', 'level0'), default='bounds',
                        help="QuPath's frame of --roi and the outputs: level 0 less "
                        'openslide.bounds-x/y when the slide has them (default; QuPath\'s '
                        'OpenSlide reader) or level 0 (QuPath opened it with Bio-Formats)')
    parser.add_argument('--level', type=int_at_least(0), default=0,
                        help='pyramid level the model sees (default 0)')
    parser.add_argument('--tile', type=int_at_least(1),
                        help="tile side in pixels of --level (default: the config's "
                        'TiledTestLoop tile_size, else 512)')
    parser.add_argument('--overlap', type=int_at_least(0), default=64,
                        help='tile overlap in pixels, more than the largest cell '
                        '(default 64)')
    parser.add_argument('--batch-size', type=int_at_least(1), default=8,
                        help='tiles per forward pass (default 8)')
    parser.add_argument('--score-thr', type=float, default=0.5,
                        help='minimum score of a detection (default 0.5, the paper\'s)')
    parser.add_argument('--nms-iou', type=float,
                        help="IoU of the NMS across tile borders (default: the config's)")
    parser.add_argument('--device', help='cpu or cuda (default: cuda when available)')
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
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override config settings, e.g. '
                        'model.test_cfg.rcnn.max_per_img=300')
    return parser, parser.parse_args(argv)


def check_slides(slides, roi, level, use_bounds=True):
    """Open every slide once and check ``roi`` and ``level`` against it, so that a bad
    slide or option fails before the model loads and before any output is written."""
    stems = [s.stem for s in slides]
    clashes = sorted({s for s in stems if stems.count(s) > 1})
    if clashes:
        raise ValueError(f'{slides[0].parent}: slides with the same name would write the '
                         f'same outputs: {", ".join(clashes)}')
    for path in slides:
        with open_slide(path) as slide:
            check_roi(roi, slide.qupath_frame(use_bounds)[2:], path)
            if not 0 <= level < slide.level_count:
                raise ValueError(f'{path}: --level {level} does not exist (levels 0-'
                                 f'{slide.level_count - 1} with the {slide.backend} reader)')


def main(argv=None):
    parser, args = parse_args(argv)
    try:
        slides = find_slides(args.slides)
        use_bounds = args.frame == 'bounds'
        check_slides(slides, args.roi, args.level, use_bounds)
        tissue = None if args.no_tissue_mask else TissueMaskConfig(
            args.tissue_downsample, args.tissue_saturation, args.tissue_od,
            args.tissue_dilate)
        model = init_slide_model(args.config, args.checkpoint, args.device,
                                 args.cfg_options)
        defaults = slide_defaults(model.cfg)
        for slide in slides:
            result = infer_slide(
                model, slide, roi=args.roi, level=args.level,
                tile_size=args.tile or defaults['tile_size'], overlap=args.overlap,
                batch_size=args.batch_size, score_thr=args.score_thr,
                nms_iou=defaults['nms_iou'] if args.nms_iou is None else args.nms_iou,
                class_agnostic=defaults['class_agnostic'], tissue=tissue,
                use_bounds=use_bounds)
            geojson, table = write_slide_outputs(result, args.out)
            print(f'{result.summary()} -> {geojson}, {table}', flush=True)
    except (ValueError, OSError) as err:
        parser.error(str(err))


if __name__ == '__main__':
    main()
