"""Image readers: region reads of tiled/strip TIFFs, colour handling, memory bounds."""
import tracemalloc

import numpy as np
import pytest
import tifffile
from PIL import Image

from cellio.images import ImageFileReader, LazyImageReader, image_size, open_image
from cellio.tiff import TiffRegionReader, UnsupportedCompression
from cellio.tiling import tile_grid
from tests.data_prep.raw_fixtures import write_bmp_rgba

RNG = np.random.default_rng(0)
IMAGE = RNG.integers(0, 256, (300, 420, 3), dtype=np.uint8)
REGIONS = [(0, 0, 420, 300), (13, 17, 200, 111), (419, 299, 1, 1), (250, 40, 10, 260)]

LAYOUTS = {
    'tiled': dict(tile=(64, 128)),
    'tiled-zlib': dict(tile=(128, 64), compression='zlib'),
    'strips': dict(rowsperstrip=7),
    'one-strip': dict(rowsperstrip=300),
    'strips-zlib-predictor': dict(rowsperstrip=50, compression='zlib', predictor=True),
    'planar-strips': dict(planarconfig='separate', rowsperstrip=30),
    'planar-tiled': dict(planarconfig='separate', tile=(64, 64), compression='zlib'),
}


@pytest.mark.parametrize('layout', LAYOUTS)
def test_tiff_regions_match_the_image(tmp_path, layout):
    kwargs = LAYOUTS[layout]
    data = np.moveaxis(IMAGE, 2, 0) if 'planar' in layout else IMAGE
    tifffile.imwrite(tmp_path / 'x.tif', data, photometric='rgb', **kwargs)
    with open_image(tmp_path / 'x.tif') as reader:
        assert isinstance(reader, TiffRegionReader)
        assert (reader.width, reader.height) == (420, 300)
        for x0, y0, w, h in REGIONS:
            region = reader.read_region(x0, y0, w, h)
            assert region.dtype == np.uint8 and region.shape == (h, w, 3)
            assert np.array_equal(region, IMAGE[y0:y0 + h, x0:x0 + w])


def test_alpha_grey_and_palette_tiffs_become_rgb(tmp_path):
    rgba = RNG.integers(0, 256, (50, 70, 4), dtype=np.uint8)
    tifffile.imwrite(tmp_path / 'rgba.tif', rgba, photometric='rgb', tile=(32, 32),
                     extrasamples=['unassalpha'])
    assert np.array_equal(open_image(tmp_path / 'rgba.tif').read_region(3, 4, 60, 40),
                          rgba[4:44, 3:63, :3])
    grey = rgba[..., 0]
    tifffile.imwrite(tmp_path / 'grey.tif', grey, photometric='minisblack', rowsperstrip=9)
    assert np.array_equal(open_image(tmp_path / 'grey.tif').read_region(0, 0, 70, 50),
                          np.repeat(grey[..., None], 3, axis=2))
    palette = Image.fromarray(grey).convert('P')
    palette.save(tmp_path / 'palette.tif')
    assert np.array_equal(open_image(tmp_path / 'palette.tif').read_region(0, 0, 70, 50),
                          np.asarray(palette.convert('RGB')))


def test_rgba_bmp_png_and_jpeg(tmp_path):
    rgba = RNG.integers(0, 256, (40, 30, 4), dtype=np.uint8)
    write_bmp_rgba(tmp_path / 'a.bmp', rgba)
    with Image.open(tmp_path / 'a.bmp') as im:
        assert im.mode == 'RGBA'  # the CRCHistoPhenotypes quirk
    Image.fromarray(rgba[..., :3]).save(tmp_path / 'a.png')
    Image.fromarray(rgba[..., :3]).save(tmp_path / 'a.jpg')
    for name in ('a.bmp', 'a.png'):
        reader = open_image(tmp_path / name)
        assert isinstance(reader, ImageFileReader)
        assert np.array_equal(reader.read_region(2, 5, 20, 30), rgba[5:35, 2:22, :3])
        assert image_size(tmp_path / name) == (30, 40)
    assert open_image(tmp_path / 'a.jpg').read_region(0, 0, 30, 40).shape == (40, 30, 3)


def test_lzw_tiff_falls_back_to_whole_image_reads_only_when_small(tmp_path):
    Image.fromarray(IMAGE).save(tmp_path / 'lzw.tif', compression='tiff_lzw')
    try:
        TiffRegionReader(tmp_path / 'lzw.tif')
    except UnsupportedCompression as err:  # no imagecodecs in this environment
        assert 'imagecodecs' in str(err)
        with pytest.raises(UnsupportedCompression, match='lzw.tif: tifffile cannot decode '
                                                         'LZW-compressed'):
            open_image(tmp_path / 'lzw.tif', max_whole_pixels=1000)
    reader = open_image(tmp_path / 'lzw.tif')
    assert np.array_equal(reader.read_region(5, 6, 100, 50), IMAGE[6:56, 5:105])


def test_bad_regions_and_files_are_clear_errors(tmp_path):
    tifffile.imwrite(tmp_path / 'x.tif', IMAGE, photometric='rgb', tile=(64, 64))
    with TiffRegionReader(tmp_path / 'x.tif') as reader:
        with pytest.raises(ValueError, match=r'x.tif: region x0=400 y0=0 w=50 h=10 is not '
                                             r'inside the 420x300 image'):
            reader.read_region(400, 0, 50, 10)
    tifffile.imwrite(tmp_path / 'u16.tif', IMAGE.astype(np.uint16), photometric='rgb')
    with pytest.raises(ValueError, match='u16.tif: expected 8-bit samples, got uint16'):
        open_image(tmp_path / 'u16.tif')
    (tmp_path / 'junk.tif').write_bytes(b'not a tiff')
    with pytest.raises(ValueError, match='junk.tif: not a readable TIFF'):
        open_image(tmp_path / 'junk.tif')
    with pytest.raises(ValueError, match='junk.tif: cannot read the image size'):
        image_size(tmp_path / 'junk.tif')
    with pytest.raises(FileNotFoundError, match='missing.png: image file not found'):
        open_image(tmp_path / 'missing.png')


def test_lazy_reader_opens_on_first_read_and_closes(tmp_path):
    tifffile.imwrite(tmp_path / 'x.tif', IMAGE, photometric='rgb', tile=(64, 64))
    lazy = LazyImageReader(tmp_path / 'x.tif')
    assert lazy._reader is None
    assert np.array_equal(lazy.read_region(1, 2, 3, 4), IMAGE[2:6, 1:4])
    assert isinstance(lazy._reader, TiffRegionReader)
    lazy.close()
    assert lazy._reader is None
    assert image_size(tmp_path / 'x.tif') == (420, 300)


@pytest.mark.parametrize('layout', [dict(tile=(512, 512), compression='zlib'),
                                    dict(rowsperstrip=3000)])  # one 27 MB strip
def test_tiling_a_large_tiff_stays_far_below_its_size_in_memory(tmp_path, layout):
    size = 3000
    tile_rows = (np.arange(size, dtype=np.uint8)[:, None, None] *
                 np.ones((1, size, 3), np.uint8))
    tifffile.imwrite(tmp_path / 'big.tif', tile_rows, photometric='rgb', **layout)
    full_bytes = size * size * 3
    del tile_rows
    with open_image(tmp_path / 'big.tif') as reader:
        tracemalloc.start()
        try:
            for x0, y0, w, h in tile_grid(size, size, 500, 100):
                region = reader.read_region(x0, y0, w, h)
                assert region[0, 0, 0] == y0 % 256 and region.shape == (h, w, 3)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    # bounded by the segments one 500 x 500 region touches, not by the image (27 MB)
    assert peak < min(8e6, full_bytes / 3), f'peak {peak / 1e6:.1f} MB'


@pytest.mark.parametrize('unit, resolution, expected', [
    ('CENTIMETER', (40000, 40000), 0.25), ('INCH', (101600, 101600), 0.25),
    (None, None, None),
    ('NONE', (4, 4), None)])
def test_tiff_resolution_tags_give_micrometres_per_pixel(tmp_path, unit, resolution,
                                                         expected):
    path = tmp_path / 'res.tif'
    kwargs = {} if resolution is None else dict(resolution=resolution, resolutionunit=unit)
    tifffile.imwrite(path, IMAGE[:32, :48], photometric='rgb', **kwargs)
    with TiffRegionReader(path) as reader:
        assert reader.mpp == (None if expected is None else pytest.approx(expected))
