"""Whole-slide inference, one module per task; import the module you need:

* :mod:`.slide` -- one slide's detections (``infer_slide``: the steps), over
  :mod:`.slide_model` (mmdet's ``init_detector`` for slides, the config's test
  settings), :mod:`.resolution` (ROI, pyramid level and resampling), :mod:`.tissue`
  (tissue mask), :mod:`.tile_batches` (tiles read ahead as model inputs) and
  :mod:`.slide_result` (``SlideResult``); the merge is
  :mod:`mmdet_pu.engine.runner.tile_merge`'s, the files
  :mod:`cellio.detection_writers`' (``tools/infer_slide.py``, docs/slides.md);
* :mod:`.cohort` -- the same over a cohort of slides (``run_cohort``: the steps),
  sharded over processes and machines (:mod:`.cohort_plan`), resumable from its records
  (:mod:`.cohort_records`), with its settings (:mod:`.cohort_settings`) and progress bar
  (:mod:`.cohort_progress`) (``tools/dist_infer_slide.sh``).

This package imports none of them, so ``import mmdet_pu.apis`` loads neither the slide
readers nor OpenSlide, and ``import mmdet_pu`` does not import it at all.
"""
