"""cellio.records: the store of finished work that training runs and cohorts
resume from."""
from cellio.records import (discard, fingerprint, read_record, settings_changes,
                            write_record)


def test_a_record_reads_back_and_an_unreadable_one_is_none(tmp_path):
    path = tmp_path / 'work' / 'run.json'
    assert read_record(path) is None
    write_record(path, dict(config='a.py', options=['x=1'], trained=True))
    assert path.read_text() == '{\n "config": "a.py",\n "options": [\n  "x=1"\n ],\n' \
                               ' "trained": true\n}'
    assert read_record(path) == dict(config='a.py', options=['x=1'], trained=True)
    path.write_text('{"config": "a.py", "opt')  # not written by write_record
    assert read_record(path) is None


def test_discard_removes_the_file_and_what_interrupted_writes_left(tmp_path):
    keep = [tmp_path / 'other.json', tmp_path / '.other.json.abc.tmp',
            tmp_path / '.s1.json.abc.txt']
    gone = [tmp_path / 's1.json', tmp_path / '.s1.json.abc123.tmp']
    for path in keep + gone:
        path.write_text('x')
    discard(tmp_path / 's1.json')
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in keep)
    discard(tmp_path / 'missing' / 's2.json')  # nothing there: nothing to do


def test_settings_compare_by_value():
    old = dict(score_thr=0.5, roi=[0, 0, 10, 10], tissue=dict(dilate=64))
    new = dict(tissue=dict(dilate=64), roi=[0, 0, 10, 10], score_thr=0.4)
    assert fingerprint(old) == fingerprint(dict(reversed(list(old.items()))))
    assert fingerprint(old) != fingerprint(new)
    assert settings_changes(old, new) == 'score_thr: 0.5 -> 0.4'
    assert settings_changes(old, dict(old, frame='level0')) == "frame: None -> 'level0'"
