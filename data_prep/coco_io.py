"""COCO dictionaries: :class:`CocoBuilder` assembles a COCO detection dict (category ids
``1..C`` in the order given, image and annotation ids from 1). Files are written by
:mod:`cellio.atomic`.
"""


class CocoBuilder:
    """Incrementally build a COCO detection dict.

    Args:
        categories: category names; they get ids ``1..len(categories)`` in this order.
    """

    def __init__(self, categories):
        if not categories:
            raise ValueError('CocoBuilder needs at least one category name')
        self.categories = [dict(id=i + 1, name=str(name))
                           for i, name in enumerate(categories)]
        self.images = []
        self.annotations = []

    def add_image(self, file_name, width, height, source, x0=0, y0=0, **extra):
        """Add an image entry and return its id.

        ``source`` is the raw image path relative to ``--src``; ``x0``/``y0`` the offset
        of this image (tile) in the source image. ``extra`` keys (e.g. ``tiles``) are
        stored on the entry as given.
        """
        image_id = len(self.images) + 1
        self.images.append(dict(
            id=image_id, file_name=str(file_name), width=int(width), height=int(height),
            source=str(source), x0=int(x0), y0=int(y0), **extra))
        return image_id

    def add_annotation(self, image_id, bbox_xywh, category_id, point=None, **extra):
        """Add an annotation and return its id.

        ``bbox_xywh`` is ``[x, y, w, h]`` in pixels of the image; ``area`` is ``w * h``
        and ``iscrowd`` 0. ``point`` (``[x, y]``) is stored only when given. ``extra``
        keys (e.g. ``score``) are stored on the annotation as given.
        """
        if not 1 <= image_id <= len(self.images):
            raise ValueError(f'add_annotation: unknown image_id {image_id}')
        if not 1 <= category_id <= len(self.categories):
            raise ValueError(f'add_annotation: category_id {category_id} is not in '
                             f'1..{len(self.categories)}')
        x, y, w, h = (float(v) for v in bbox_xywh)
        if w <= 0 or h <= 0:
            raise ValueError(f'add_annotation: empty box {[x, y, w, h]} on image '
                             f'{self.images[image_id - 1]["file_name"]}')
        ann = dict(id=len(self.annotations) + 1, image_id=int(image_id),
                   category_id=int(category_id), bbox=[x, y, w, h], area=w * h,
                   iscrowd=0)
        if point is not None:
            ann['point'] = [float(point[0]), float(point[1])]
        ann.update(extra)
        self.annotations.append(ann)
        return ann['id']

    def to_dict(self):
        """The COCO dict (``images``, ``annotations``, ``categories``)."""
        return dict(images=self.images, annotations=self.annotations,
                    categories=self.categories)
