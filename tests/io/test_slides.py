"""Region reads of whole slides (cellio.slides): OpenSlide, the tifffile fallback,
PIL for small images, transparency, resolution."""
import cv2
import numpy as np
import pytest
import tifffile
from PIL import Image

from cellio.slides import OpenSlideReader, _open_tiff_fallback, open_slide
from cellio.tiff import TiffRegionReader, UnsupportedCompression
from tests.apis._fixtures import make_slide_image
from tests._qupath_fixtures import write_pyramid_tiff


@pytest.fixture
def pyramid(tmp_path):
    return write_pyramid_tiff(tmp_path / 'slide.tif', make_slide_image(), tile=64)


def test_openslide_and_tifffile_fallback_read_the_same_pixels(pyramid, tmp_path):
    image = make_slide_image()
    with open_slide(pyramid) as slide, _open_tiff_fallback(pyramid) as fallback:
        assert (slide.backend, fallback.backend) == ('openslide', 'tifffile')
        assert slide.level_dimensions == ((640, 480), (320, 240), (160, 120))
        assert slide.level_downsamples == (1.0, 2.0, 4.0)
        assert fallback.level_dimensions == ((640, 480),)
        for x, y, w, h in [(0, 0, 640, 480), (13, 17, 200, 111), (639, 479, 1, 1)]:
            region = slide.read_region(0, x, y, w, h)
            assert region.dtype == np.uint8 and region.shape == (h, w, 3)
            assert np.array_equal(region, image[y:y + h, x:x + w])
            assert np.array_equal(fallback.read_region(0, x, y, w, h), region)
        half = cv2.resize(image, (320, 240), interpolation=cv2.INTER_AREA)
        assert np.array_equal(slide.read_region(1, 10, 20, 64, 32), half[20:52, 10:74])
        with pytest.raises(ValueError, match='not inside level 1'):
            slide.read_region(1, 300, 0, 64, 64)
        with pytest.raises(ValueError, match='level 1 does not exist'):
            fallback.read_region(1, 0, 0, 8, 8)

    # a strip TIFF is not for OpenSlide: the tifffile fallback reads it region by region
    tifffile.imwrite(tmp_path / 'strips.tif', image, photometric='rgb', rowsperstrip=16)
    with open_slide(tmp_path / 'strips.tif') as strips:
        assert strips.backend == 'tifffile'
        assert np.array_equal(strips.read_region(0, 5, 6, 70, 80), image[6:86, 5:75])


def test_png_through_pil_and_unreadable_files(tmp_path):
    image = make_slide_image()
    cv2.imwrite(str(tmp_path / 'small.png'), image[..., ::-1])
    with open_slide(tmp_path / 'small.png') as png:
        assert png.backend == 'pil' and png.dimensions == (640, 480)
        assert np.array_equal(png.read_region(0, 3, 4, 50, 60), image[4:64, 3:53])
    with pytest.raises(ValueError, match='too large to decode whole'):
        open_slide(tmp_path / 'small.png', max_whole_pixels=1000)
    (tmp_path / 'broken.svs').write_bytes(b'not a slide')
    with pytest.raises(ValueError, match='broken.svs: cannot read the slide'):
        open_slide(tmp_path / 'broken.svs')
    with pytest.raises(FileNotFoundError, match='missing.tif'):
        open_slide(tmp_path / 'missing.tif')


def test_tiff_that_tifffile_cannot_decode_is_decoded_whole_only_when_small(tmp_path):
    image = make_slide_image()
    Image.fromarray(image).save(tmp_path / 'lzw.tif', compression='tiff_lzw')  # strips
    try:
        TiffRegionReader(tmp_path / 'lzw.tif').close()
        pytest.skip('imagecodecs is installed: tifffile decodes LZW itself')
    except UnsupportedCompression:
        pass
    with open_slide(tmp_path / 'lzw.tif') as slide:
        assert slide.backend == 'pil' and slide.dimensions == (640, 480)
        assert np.array_equal(slide.read_region(0, 5, 6, 70, 80), image[6:86, 5:75])
    with pytest.raises(ValueError, match=r'lzw.tif: cannot read the slide: .*tifffile '
                                         r'cannot decode LZW-compressed .*imagecodecs'):
        open_slide(tmp_path / 'lzw.tif', max_whole_pixels=1000)


def test_transparent_openslide_pixels_become_white_background():
    class TransparentSlide:
        level_dimensions, level_downsamples = ((4, 1),), (1.0,)

        def read_region(self, location, level, size):
            return np.array([[[10, 20, 30, 255], [0, 0, 0, 0], [100, 100, 100, 128],
                              [7, 7, 7, 0]]], np.uint8)

    rgb = OpenSlideReader(TransparentSlide(), 'x.svs').read_region(0, 0, 0, 4, 1)
    assert rgb.tolist() == [[[10, 20, 30], [255, 255, 255], [177, 177, 177],
                             [255, 255, 255]]]


def test_slide_resolution_comes_from_openslide_properties(tmp_path):
    class Slide:
        level_dimensions, level_downsamples = ((4, 1),), (1.0,)
        properties = {'openslide.mpp-x': '0.25', 'openslide.mpp-y': '0.27'}

    assert OpenSlideReader(Slide(), tmp_path / 's.svs').mpp == pytest.approx(0.26)
    Slide.properties = {'openslide.mpp-x': '0.25'}
    assert OpenSlideReader(Slide(), tmp_path / 's.svs').mpp is None
