"""PriorUpdateHook: update rule, losses' buffers, eval-mode inference, logging, resume."""
import json
from pathlib import Path

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner
from torch import nn

from mmdet_pu.engine.hooks import PriorUpdateHook
from mmdet_pu.engine.hooks import prior_update_hook as hook_module
from mmdet_pu.engine.hooks.prior_update_hook import (constrain_priors,
                                                     count_annotations,
                                                     priors_from_counts,
                                                     resolve_anchor_class)
from mmdet_pu.engine.runner import CellRunner
from tests._data import REPO, make_tiny_coco, write_tiny_config

CLASSES = ('cell0', 'cell1', 'cell2')
INITIAL_PRIORS = [0.3, 0.2, 0.1]


def mpu_extra(hook: dict) -> str:
    """Config text: mpu-style losses (configs/pu/nucls_mpu.py) for 3 classes."""
    return f"""
model = dict(
    rpn_head=dict(type='PURPNHead', loss_cls=dict(
        _delete_=True, type='PULoss', prior=0.6, use_sigmoid=True)),
    roi_head=dict(bbox_head=dict(num_classes=3, loss_cls=dict(
        _delete_=True, type='MultiPULoss', priors={INITIAL_PRIORS!r}))))
custom_hooks = [{hook!r}]
"""


def tiny_mpu_config(tmp_path: Path, hook: dict, max_iters: int = 2, extra: str = '',
                    n_images: int = 6) -> str:
    """A 3-class tiny dataset and a trainable slim mpu config using ``hook``."""
    data_root = tmp_path / 'data'
    make_tiny_coco(data_root, n_images=n_images, size=128, num_classes=3,
                   cells_per_image=6)
    return write_tiny_config(tmp_path / 'tiny_mpu.py', data_root, num_classes=3,
                             max_iters=max_iters, batch_size=2,
                             extra=mpu_extra(hook) + extra)


def annotation_counts(tmp_path: Path):
    ann = json.loads((tmp_path / 'data' / 'annotations' / 'train.json').read_text())
    counts = [0] * 3
    for a in ann['annotations']:
        counts[a['category_id'] - 1] += 1
    return counts


def load_config(tmp_path: Path, hook: dict, max_iters: int = 2) -> Config:
    cfg = Config.fromfile(tiny_mpu_config(tmp_path, hook, max_iters=max_iters))
    cfg.work_dir = str(tmp_path / 'work')
    # Runners of one process share the logger / visualizer of the same name
    cfg.experiment_name = cfg.visualizer.name = tmp_path.name
    return cfg


def build_runner(tmp_path: Path, cfg_options=None, **hook_kwargs) -> Runner:
    """A runner whose loop, data loader and optimizer are built, before training."""
    hook = dict(dict(type='PriorUpdateHook', anchor_prior=0.3), **hook_kwargs)
    cfg = load_config(tmp_path, hook)
    cfg.merge_from_dict(cfg_options or {})
    runner = CellRunner.from_cfg(cfg)
    runner.train_loop  # noqa: B018  (builds the loop and the data loader)
    runner.optim_wrapper = runner.build_optim_wrapper(runner.optim_wrapper)
    return runner


def prior_hook(runner: Runner) -> PriorUpdateHook:
    return next(h for h in runner.hooks if isinstance(h, PriorUpdateHook))


def losses(runner: Runner):
    return runner.model.roi_head.bbox_head.loss_cls, runner.model.rpn_head.loss_cls


def set_counts(monkeypatch, hook, counts):
    monkeypatch.setattr(hook, 'count_detections',
                        lambda runner, data_batch: torch.tensor(counts))


# ----------------------------------------------------------------- update rule
def test_priors_from_counts_follows_section_2_3():
    previous = torch.tensor([0.3, 0.2, 0.1])
    new = priors_from_counts(previous, torch.tensor([4, 10, 2]), anchor=1,
                             anchor_prior=0.25)
    torch.testing.assert_close(new, torch.tensor([0.25 * 4 / 10, 0.25, 0.25 * 2 / 10]))


def test_priors_from_counts_keeps_previous_when_anchor_not_detected():
    previous = torch.tensor([0.3, 0.2, 0.1])
    new = priors_from_counts(previous, torch.tensor([0, 7, 3]), anchor=0,
                             anchor_prior=0.3)
    torch.testing.assert_close(new, previous)
    assert new is not previous


def test_constrain_priors_raises_undetected_classes_to_min_prior():
    priors, scaled = constrain_priors(torch.tensor([0.3, 0.0, 0.1]), anchor=0,
                                      min_prior=1e-3, max_total_prior=0.99)
    torch.testing.assert_close(priors, torch.tensor([0.3, 1e-3, 0.1]))
    assert not scaled


def test_constrain_priors_scales_non_anchor_excess_to_the_total_bound():
    priors, scaled = constrain_priors(torch.tensor([0.3, 0.9, 0.45, 0.0]), anchor=0,
                                      min_prior=0.01, max_total_prior=0.99)
    assert scaled
    assert priors[0] == pytest.approx(0.3)
    assert priors.sum().item() == pytest.approx(0.99)
    assert priors[3].item() == pytest.approx(0.01)
    # the excesses over min_prior keep their ratio 0.89 : 0.44
    assert ((priors[1] - 0.01) / (priors[2] - 0.01)).item() == pytest.approx(0.89 / 0.44)


class AnnotatedDataset:
    """Two images: one annotation of class 0 (two more ignored), two of class 1."""
    infos = [dict(instances=[dict(bbox_label=0, ignore_flag=0),
                             dict(bbox_label=0, ignore_flag=1),
                             dict(bbox_label=0, ignore_flag=1)]),
             dict(instances=[dict(bbox_label=1, ignore_flag=0),
                             dict(bbox_label=1, ignore_flag=0)])]

    def __len__(self):
        return len(self.infos)

    def get_data_info(self, idx):
        return self.infos[idx]


def test_count_annotations_skips_ignored_instances():
    assert count_annotations(AnnotatedDataset(), 3) == [1, 2, 0]


def test_resolve_anchor_class_by_name_index_or_counts():
    classes = ['cell0', 'cell1', 'cell2']
    assert resolve_anchor_class('cell2', classes, None, 'key') == 2
    assert resolve_anchor_class(1, classes, None, 'key') == 1
    assert resolve_anchor_class(None, classes, AnnotatedDataset(), 'key') == 1


@pytest.mark.parametrize('value, message', [
    ('tumor', r"^hook: anchor_class 'tumor' is not one of the dataset classes "
              r"\('cell0', 'cell1', 'cell2'\)$"),
    (-1, r'^hook: anchor_class: expected a class name or an index in 0\.\.2 \(3 classes '
         r".*got -1$"),
    (3, r'index in 0\.\.2 .*got 3$'),
    (True, r'got True$'),
    (1.0, r'got 1\.0$')])
def test_resolve_anchor_class_refuses_what_names_no_class(value, message):
    """-1 would silently pick the last class and 3 of 3 fail later with an IndexError."""
    with pytest.raises(ValueError, match=message):
        resolve_anchor_class(value, ['cell0', 'cell1', 'cell2'], None,
                             'hook: anchor_class')


@pytest.mark.parametrize('kwargs', [
    dict(anchor_prior=0.0), dict(anchor_prior=1.0), dict(anchor_prior=0.995),
    dict(anchor_prior=0.3, min_prior=0.0), dict(anchor_prior=0.3, interval=0),
    dict(anchor_prior=0.3, max_total_prior=1.0), dict(anchor_prior=0.3, smoothing=1.0),
    dict(anchor_prior=0.3, smoothing=-0.1)])
def test_invalid_arguments_are_refused(kwargs):
    with pytest.raises(ValueError, match='PriorUpdateHook'):
        PriorUpdateHook(**kwargs)


# ----------------------------------------------------------------- hook on a runner
def test_before_train_finds_most_annotated_class_and_sets_anchor_prior(tmp_path):
    runner = build_runner(tmp_path, anchor_prior=0.25)
    hook = prior_hook(runner)
    hook.before_train(runner)
    counts = annotation_counts(tmp_path)
    assert hook.anchor == counts.index(max(counts))
    expected = torch.tensor(INITIAL_PRIORS)
    expected[hook.anchor] = 0.25
    roi_loss, rpn_loss = losses(runner)
    torch.testing.assert_close(roi_loss.priors, expected)
    assert rpn_loss.prior.item() == pytest.approx(expected.sum().item())


def test_anchor_class_by_name_and_unknown_name(tmp_path):
    runner = build_runner(tmp_path, anchor_class='cell2')
    prior_hook(runner).before_train(runner)
    assert prior_hook(runner).anchor == 2
    prior_hook(runner).anchor_class = 'tumor'
    with pytest.raises(ValueError, match='tumor'):
        prior_hook(runner).before_train(runner)


def test_update_writes_both_losses_buffers_in_place_and_logs(tmp_path, monkeypatch):
    runner = build_runner(tmp_path, anchor_class=0)
    hook = prior_hook(runner)
    hook.before_train(runner)
    roi_loss, rpn_loss = losses(runner)
    roi_buffer, rpn_buffer = roi_loss.priors, rpn_loss.prior

    set_counts(monkeypatch, hook, [10, 5, 0])
    hook.before_train_iter(runner, 0, data_batch=None)
    hook.after_train_iter(runner, 0)
    expected = torch.tensor([0.3, 0.15, hook.min_prior])
    torch.testing.assert_close(roi_loss.priors, expected)
    assert rpn_loss.prior.item() == pytest.approx(expected.sum().item())
    assert roi_loss.priors is roi_buffer and rpn_loss.prior is rpn_buffer
    assert dict(runner.model.named_buffers())['roi_head.bbox_head.loss_cls.priors'] \
        .data_ptr() == roi_buffer.data_ptr()

    hub = runner.message_hub
    for name, value in zip(CLASSES, expected.tolist()):
        assert hub.get_scalar(f'train/prior_{name}').current() == pytest.approx(value)
    assert hub.get_scalar('train/prior_rpn').current() == pytest.approx(
        expected.sum().item())

    # N_1 = 0: previous priors kept
    set_counts(monkeypatch, hook, [0, 9, 9])
    hook.before_train_iter(runner, 1, data_batch=None)
    torch.testing.assert_close(roi_loss.priors, expected)


def test_counts_are_all_reduced_before_the_update(tmp_path, monkeypatch):
    runner = build_runner(tmp_path, anchor_class=0)
    hook = prior_hook(runner)
    hook.before_train(runner)
    set_counts(monkeypatch, hook, [1, 1, 0])
    calls = []

    def all_reduce_with_other_rank(counts, op):
        calls.append(op)
        counts += torch.tensor([3, 1, 2])  # another rank's counts
    monkeypatch.setattr(hook_module, 'all_reduce', all_reduce_with_other_rank)
    hook.before_train_iter(runner, 0, data_batch=None)
    assert calls == ['sum']
    torch.testing.assert_close(losses(runner)[0].priors,
                               torch.tensor([0.3, 0.3 * 2 / 4, 0.3 * 2 / 4]))


def test_total_is_clipped_and_warned_once(tmp_path, monkeypatch):
    runner = build_runner(tmp_path, anchor_class=0)
    hook = prior_hook(runner)
    hook.before_train(runner)
    warnings = []
    monkeypatch.setattr(hook_module, 'print_log',
                        lambda msg, **kwargs: warnings.append(msg))
    set_counts(monkeypatch, hook, [10, 30, 10])
    for _ in range(2):
        hook.before_train_iter(runner, 0, data_batch=None)
    roi_loss, rpn_loss = losses(runner)
    assert roi_loss.priors.sum().item() == pytest.approx(hook.max_total_prior)
    assert roi_loss.priors[0].item() == pytest.approx(0.3)
    assert rpn_loss.prior.item() == pytest.approx(hook.max_total_prior)
    assert len(warnings) == 1 and 'max_total_prior' in warnings[0]


def test_interval_and_begin_iter(tmp_path, monkeypatch):
    runner = build_runner(tmp_path, anchor_class=0, interval=2, begin_iter=1)
    hook = prior_hook(runner)
    hook.before_train(runner)
    roi_loss = losses(runner)[0]
    updated = []
    for it, count in enumerate([2, 4, 6, 8, 10]):
        runner.train_loop._iter = it
        set_counts(monkeypatch, hook, [10, count, 0])
        before = roi_loss.priors.clone()
        hook.before_train_iter(runner, it, data_batch=None)
        updated.append(not torch.equal(before, roi_loss.priors))
    assert updated == [False, True, False, True, False]
    assert roi_loss.priors[1].item() == pytest.approx(0.3 * 8 / 10)


def test_smoothing_runs_the_rule_on_running_counts_and_checkpoints_them(
        tmp_path, monkeypatch):
    runner = build_runner(tmp_path, anchor_class=0, smoothing=0.75)
    hook = prior_hook(runner)
    hook.before_train(runner)
    roi_loss = losses(runner)[0]
    running = None
    for it, batch in enumerate([[10, 5, 5], [1, 5, 5], [10, 0, 5], [10, 0, 5]]):
        set_counts(monkeypatch, hook, batch)
        hook.before_train_iter(runner, it, data_batch=None)
        batch = torch.tensor(batch, dtype=torch.float64)
        running = batch if running is None else 0.75 * running + 0.25 * batch
        torch.testing.assert_close(hook.running_counts, running)
        torch.testing.assert_close(roi_loss.priors, (0.3 * running / running[0]).float())
    # one batch with a single anchor-class detection and one without class 1 no longer
    # swing the priors to the total bound and to min_prior
    assert roi_loss.priors.sum() < 0.7 and roi_loss.priors[1] > 0.05

    checkpoint = {}
    hook.before_save_checkpoint(runner, checkpoint)
    resumed = PriorUpdateHook(anchor_prior=0.3, smoothing=0.75)
    resumed.after_load_checkpoint(runner, checkpoint)
    torch.testing.assert_close(resumed.running_counts, running)


def test_detections_are_counted_in_eval_mode_and_train_mode_is_restored(tmp_path):
    runner = build_runner(tmp_path, score_thr=0.2)
    hook = prior_hook(runner)
    hook.before_train(runner)
    model = runner.model
    model.backbone.layer1.eval()  # a module in eval mode must stay in eval mode
    flags = {name: m.training for name, m in model.named_modules()}
    state = {k: v.clone() for k, v in model.state_dict().items()}
    data_batch = next(iter(runner.train_dataloader))

    counts = hook.count_detections(runner, data_batch)

    assert {name: m.training for name, m in model.named_modules()} == flags
    assert any(flags.values()) and not all(flags.values())
    for key, value in model.state_dict().items():  # BN running stats untouched
        torch.testing.assert_close(value, state[key], msg=key)
    assert 'pred_instances' not in data_batch['data_samples'][0]

    model.eval()
    with torch.no_grad():
        data = model.data_preprocessor(data_batch, False)
        results = model.predict(data['inputs'], data['data_samples'], rescale=False)
    labels = torch.cat([r.pred_instances.labels[r.pred_instances.scores >= 0.2]
                        for r in results])
    assert counts.tolist() == torch.bincount(labels, minlength=3).tolist()
    assert counts.sum() > 0


def test_features_are_reused_when_bn_is_frozen_with_the_same_result(
        tmp_path, monkeypatch):
    runner = build_runner(tmp_path, {'model.backbone.norm_eval': True},
                          score_thr=0.05, anchor_class=0)
    hook = prior_hook(runner)
    hook.before_train(runner)
    model = runner.model
    model.train()
    data_batch = next(iter(runner.train_dataloader))
    counts = hook.count_detections(runner, data_batch)  # separate inference forward
    assert counts[0] > 0 and counts.sum() > counts[0]
    expected, _ = constrain_priors(
        priors_from_counts(losses(runner)[0].priors, counts, 0, 0.3), 0,
        hook.min_prior, hook.max_total_prior)

    separate_forwards = []
    monkeypatch.setattr(hook, 'count_detections',
                        lambda *args: separate_forwards.append(args))
    before = losses(runner)[0].priors.clone()
    hook.before_train_iter(runner, 0, data_batch)
    torch.testing.assert_close(losses(runner)[0].priors, before)  # not yet
    model.train_step(data_batch, runner.optim_wrapper)  # the update happens here
    assert not separate_forwards
    torch.testing.assert_close(losses(runner)[0].priors, expected)
    assert losses(runner)[1].prior.item() == pytest.approx(expected.sum().item())

    hook.after_train(runner)
    assert not model.neck._forward_hooks


def test_features_are_not_reused_while_bn_trains(tmp_path, monkeypatch):
    runner = build_runner(tmp_path, anchor_class=0)  # slim model: norm_eval=False
    hook = prior_hook(runner)
    hook.before_train(runner)
    runner.model.train()
    set_counts(monkeypatch, hook, [10, 5, 5])
    hook.before_train_iter(runner, 0, data_batch=None)
    torch.testing.assert_close(losses(runner)[0].priors, torch.tensor([0.3, 0.15, 0.15]))


@pytest.mark.parametrize('layer, mode, same', [
    (nn.BatchNorm2d(4), 'train', False), (nn.BatchNorm2d(4), 'eval', True),
    (nn.Dropout(0.5), 'train', False), (nn.Dropout(0.0), 'train', True),
    (nn.GroupNorm(2, 4), 'train', True)])
def test_behaves_as_in_eval(layer, mode, same):
    module = nn.Sequential(nn.Conv2d(3, 4, 3), layer)
    module.train(mode == 'train')
    assert hook_module._behaves_as_in_eval(module) is same


def test_requires_a_multi_pu_loss():
    model = nn.Linear(1, 1)
    runner = type('FakeRunner', (), dict(model=model))()
    with pytest.raises(RuntimeError, match='MultiPULoss'):
        PriorUpdateHook(anchor_prior=0.3).before_train(runner)


def test_nucls_mpu_enables_the_hook_and_anchor_prior_is_a_cfg_option():
    cfg = Config.fromfile(str(REPO / 'configs/pu/nucls_mpu.py'))
    cfg.merge_from_dict({'custom_hooks.0.anchor_prior': 0.25})
    assert cfg.custom_hooks[0].type == 'PriorUpdateHook'
    assert cfg.custom_hooks[0].anchor_prior == 0.25


# ----------------------------------------------------------------- training runs
def scalars(work_dir: Path):
    (scalars_file,) = work_dir.glob('*/vis_data/scalars.json')
    return [json.loads(line) for line in scalars_file.read_text().splitlines()]


class PriorProbe(Hook):
    """Records the priors before PriorUpdateHook changes them in the first iteration."""

    priority = 'VERY_HIGH'

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        if not hasattr(self, 'priors'):
            roi_loss, rpn_loss = losses(runner)
            self.priors = roi_loss.priors.clone()
            self.rpn_prior = rpn_loss.prior.clone()


def train(tmp_path: Path, hook: dict, max_iters: int, **cfg_options) -> Runner:
    cfg = load_config(tmp_path, hook, max_iters)
    cfg.experiment_name = cfg.visualizer.name = f'{tmp_path.name}_{max_iters}'
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None
    cfg.merge_from_dict(cfg_options)
    runner = CellRunner.from_cfg(cfg)
    runner.register_hook(PriorProbe())
    runner.train()
    return runner


def test_training_30_iterations_logs_valid_changing_priors(tmp_path):
    # score_thr 0.05: an untrained detector has few detections >= 0.5
    hook = dict(type='PriorUpdateHook', anchor_prior=0.3, score_thr=0.05)
    train(tmp_path, hook, max_iters=30)

    records = [r for r in scalars(tmp_path / 'work') if 'loss' in r]
    assert [r['iter'] for r in records] == list(range(1, 31))
    counts = annotation_counts(tmp_path)
    anchor = CLASSES[counts.index(max(counts))]
    for r in records:
        priors = [r[f'prior_{name}'] for name in CLASSES]
        assert all(p > 0 for p in priors) and sum(priors) < 1
        assert r[f'prior_{anchor}'] == pytest.approx(0.3)
        assert r['prior_rpn'] == pytest.approx(sum(priors), rel=1e-5)
    others = [name for name in CLASSES if name != anchor]
    history = {tuple(r[f'prior_{name}'] for name in others) for r in records}
    assert len(history) > 2, history
    (log_file,) = (tmp_path / 'work').glob('*/*.log')
    assert f'prior_{others[0]}: ' in log_file.read_text()


def test_resume_restores_the_priors_of_the_checkpoint(tmp_path):
    hook = dict(type='PriorUpdateHook', anchor_prior=0.3, score_thr=0.05)
    train(tmp_path, hook, max_iters=3)
    state = torch.load(tmp_path / 'work' / 'iter_3.pth', map_location='cpu',
                       weights_only=False)['state_dict']
    saved = state['roi_head.bbox_head.loss_cls.priors']
    assert not torch.allclose(saved, torch.tensor(INITIAL_PRIORS))  # they were updated

    runner = train(tmp_path, hook, max_iters=4, resume=True)
    assert runner.iter == 4
    probe = next(h for h in runner.hooks if isinstance(h, PriorProbe))
    torch.testing.assert_close(probe.priors, saved)
    torch.testing.assert_close(probe.rpn_prior, state['rpn_head.loss_cls.prior'])


def test_rpn_prior_kept_when_not_updated(tmp_path, monkeypatch):
    """update_rpn_prior=False: a per-stage RPN prior stays as configured, and is logged."""
    runner = build_runner(tmp_path, anchor_class=0, update_rpn_prior=False)
    hook = prior_hook(runner)
    roi_loss, rpn_loss = losses(runner)
    configured = rpn_loss.prior.item()
    hook.before_train(runner)
    set_counts(monkeypatch, hook, [10, 5, 0])
    hook.before_train_iter(runner, 0, data_batch=None)
    hook.after_train_iter(runner, 0)
    torch.testing.assert_close(roi_loss.priors, torch.tensor([0.3, 0.15, hook.min_prior]))
    assert rpn_loss.prior.item() == configured != pytest.approx(roi_loss.priors.sum().item())
    assert runner.message_hub.get_scalar('train/prior_rpn').current() == configured
