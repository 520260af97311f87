"""Whole-slide inference, one module per task; import the module you need:

* :mod:`.slide` -- whole-slide detection exported to QuPath (``tools/infer_slide.py``,
  docs/slides.md), over :mod:`mmdet_pu.io.slides` (region reads of slides) and :mod:`.tissue`
  (tissue mask);
* :mod:`.cohort` -- the same over a cohort of slides: sharded over processes and
  machines, resumable, with a manifest (``tools/dist_infer_slide.sh``).

This package imports none of them, so ``import mmdet_pu.apis`` loads neither the slide
readers nor OpenSlide, and ``import mmdet_pu`` does not import it at all.
"""
