"""What a cohort's slides are computed with: the inference settings
(:class:`CohortSettings`) and the model's identity (:func:`run_identity`), together the
fingerprint of every slide's record (:mod:`.cohort_records`)."""
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Tuple

from mmengine.dist import get_dist_info

from mmdet_pu.engine.runner.test_flips import check_flips
from .slide_model import slide_defaults
from .tissue import TissueMaskConfig

#: QuPath's frames of ``roi`` and the outputs (:attr:`CohortSettings.frame`).
FRAMES = ('bounds', 'level0')


@dataclass(frozen=True)
class CohortSettings:
    """The inference settings of every slide (the arguments of
    :func:`~mmdet_pu.apis.slide.infer_slide`). ``target_mpp`` is the resolution the
    model sees (resolved: a number, or ``None`` to read ``level`` as it is); ``scale``
    the factor the training images were resampled by from their sources, applied where
    ``target_mpp`` or a slide's resolution is unknown
    (:func:`~.resolution.plan_resolution`).

    ``frame`` is QuPath's frame of ``roi`` and of the outputs
    (:meth:`~cellio.slides.SlideReader.qupath_frame`): ``'bounds'``, level 0 less
    the ``openslide.bounds-x/y`` of a slide that has them (QuPath's OpenSlide server),
    or ``'level0'``, level 0 as it is (a slide QuPath opened with Bio-Formats or
    ``--no-crop``); ``infer_slide``'s ``use_bounds``. ``flips`` are the test-time flips
    (``tools/infer_slide.py --tta``).
    """
    roi: Optional[Tuple[int, int, int, int]] = None
    frame: str = 'bounds'
    level: Optional[int] = None
    target_mpp: Optional[float] = None
    tile_size: int = 512
    overlap: int = 64
    batch_size: int = 8
    score_thr: float = 0.5
    nms_iou: float = 0.3
    class_agnostic: bool = False
    tissue: Optional[TissueMaskConfig] = field(default_factory=TissueMaskConfig)
    scale: Optional[float] = None
    flips: Tuple[str, ...] = ()

    def __post_init__(self):
        if self.frame not in FRAMES:
            raise ValueError(f'frame must be one of {", ".join(FRAMES)}, got '
                             f'{self.frame!r}')
        # checked before any slide runs (a config's flips too), kept as a tuple
        object.__setattr__(self, 'flips', check_flips(self.flips, 'CohortSettings'))

    @property
    def use_bounds(self) -> bool:
        """Whether QuPath's frame is the slide's OpenSlide bounds."""
        return self.frame == 'bounds'

    def infer_kwargs(self) -> dict:
        """Keyword arguments of :func:`~mmdet_pu.apis.slide.infer_slide`."""
        kwargs = {key: getattr(self, key) for key in self.__dataclass_fields__
                  if key != 'frame'}
        return dict(kwargs, use_bounds=self.use_bounds)

    def as_dict(self) -> dict:
        """JSON-ready dict (the tissue settings as a dict or ``None``; ``scale`` and
        ``flips`` only when set, so that the runs before them keep their fingerprint)."""
        out = asdict(self)
        out['roi'] = None if self.roi is None else list(self.roi)
        out['flips'] = list(self.flips)
        for key in ('scale', 'flips'):
            if not out[key]:
                del out[key]
        return out


def model_settings(model, checkpoint, target_mpp=None, tile_size=None, nms_iou=None,
                   flips=None, **settings) -> CohortSettings:
    """The :class:`CohortSettings` of ``model`` (loaded from ``checkpoint``): ``settings``
    with ``target_mpp`` defaulting to the model's training resolution
    (``dataset_meta['mpp']``), ``scale`` to its training images' resampling factor
    (``dataset_meta['scale']``; process 0 warns when both are unknown), ``tile_size``,
    ``nms_iou`` and ``flips`` to the config's (:func:`~.slide_model.slide_defaults`,
    which also gives ``class_agnostic``)."""
    target_mpp = target_mpp or model.dataset_meta.get('mpp')
    scale = model.dataset_meta.get('scale')
    rank, _ = get_dist_info()
    if target_mpp is None and scale is None and rank == 0:
        warnings.warn(f'{checkpoint}: the training resolution is unknown (no mpp '
                      "in the checkpoint's dataset_meta nor in the config's metainfo); "
                      f'slides are read at level {settings.get("level") or 0} as they '
                      'are; set --target-mpp to resample them')
    defaults = slide_defaults(model.cfg)
    return CohortSettings(
        target_mpp=target_mpp, scale=scale, tile_size=tile_size or defaults['tile_size'],
        nms_iou=defaults['nms_iou'] if nms_iou is None else nms_iou,
        flips=defaults['flips'] if flips is None else flips,
        class_agnostic=defaults['class_agnostic'], **settings)


def run_identity(config, checkpoint, cfg_options=None) -> dict:
    """What makes a model's results besides the settings: its config and checkpoint
    (absolute paths, the checkpoint's size) and ``--cfg-options``."""
    checkpoint = Path(checkpoint).resolve()
    return dict(config=str(Path(config).resolve()), checkpoint=str(checkpoint),
                checkpoint_bytes=checkpoint.stat().st_size, cfg_options=cfg_options)
