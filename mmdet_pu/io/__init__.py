"""File formats exchanged with other software: QuPath GeoJSON (:mod:`.qupath`) and
region reads of large TIFFs (:mod:`.tiff`).

The modules themselves import only numpy and tifffile (no torch, no mmdet, no model),
but importing them runs ``mmdet_pu/__init__.py``, which registers the models and so
imports torch and mmdet; the converters in ``data_prep/`` therefore import them when
they read files, not when they build their command line.
"""
