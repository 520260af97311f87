"""cellio: the project's torch-free layer, every reader and writer of files and the
command-line helpers, one module per concern:

* :mod:`.images` -- region readers of ordinary images and large TIFFs (dataset converters),
  and of crops and masked areas of another reader;
* :mod:`.tiff` -- segment-by-segment region reads of TIFFs;
* :mod:`.slides` -- region reads of whole slides, any pyramid level (OpenSlide, tifffile);
* :mod:`.sources` -- the raw image or slide under an annotation file: level-0 reader,
  size, QuPath's frame, resolution;
* :mod:`.tiling` -- tile grids over an image and the cells that fall in each tile;
* :mod:`.geometry` -- polygons and boxes: points inside, pixel masks, bounds, merging;
* :mod:`.qupath` -- QuPath GeoJSON, read and written (a package: naming, classes,
  parser, reader, writer);
* :mod:`.instance_masks` -- instance label images and the intensity images they annotate;
* :mod:`.atomic` -- files and directories that appear complete or not at all;
* :mod:`.records` -- records of finished work, from which reruns resume;
* :mod:`.detection_writers` -- a slide's detections as QuPath GeoJSON and a CSV of cells;
* :mod:`.cli` -- argparse types, the launcher arguments and the report of user errors
  that every command line shares.

The modules import numpy, tifffile and OpenCV/PIL, never torch, mmengine, mmdet or
another package of the project, and OpenSlide only when a slide is opened: ``data_prep``'s
converters need nothing else, and a command line prints its help and its errors without
loading torch. ``mmdet_pu`` builds on it.
"""
