import json

import pytest

from data_prep.coco_io import CocoBuilder


def test_coco_builder_ids_area_and_extra_fields():
    builder = CocoBuilder(['tumor', 'lymphocyte'])
    img = builder.add_image('tiles/a_x0_y0.png', 250, 250, 'a.bmp', x0=0, y0=200)
    ann = builder.add_annotation(img, [1, 2, 12, 10], 2, point=[7, 7], score=0.75)
    coco = builder.to_dict()
    assert coco['categories'] == [dict(id=1, name='tumor'), dict(id=2, name='lymphocyte')]
    assert coco['images'][0] == dict(id=1, file_name='tiles/a_x0_y0.png', width=250,
                                     height=250, source='a.bmp', x0=0, y0=200)
    assert coco['annotations'][0] == dict(
        id=ann, image_id=img, category_id=2, bbox=[1.0, 2.0, 12.0, 10.0], area=120.0,
        iscrowd=0, point=[7.0, 7.0], score=0.75)
    json.dumps(coco)  # serialisable


@pytest.mark.parametrize('image_id, bbox, category', [
    (2, [0, 0, 5, 5], 1), (1, [0, 0, 0, 5], 1), (1, [0, 0, 5, 5], 3)])
def test_coco_builder_rejects_bad_annotations(image_id, bbox, category):
    builder = CocoBuilder(['a', 'b'])
    builder.add_image('x.png', 10, 10, 'x.png')
    with pytest.raises(ValueError):
        builder.add_annotation(image_id, bbox, category)
