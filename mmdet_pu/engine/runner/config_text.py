"""A ``Config`` that formats its text once per contents.

mmengine formats a config's text (``Config.pretty_text``) with yapf every time it is
asked for it, and a training asks five times: the log, the dumped config, the
visualizer's copy, the message hub's and each checkpoint's meta (a test run twice).
For the configs of this package that is about 3 s a call on one CPU core, 15-20 s a
training, and most of the time of a short one. :class:`OnceFormattedConfig` keeps the
text of the contents it last formatted, so a runner formats once; the text is mmengine's
own, character for character.
"""
import copy
import gc

from mmengine.config import Config


class OnceFormattedConfig(Config):
    """``Config`` whose :attr:`pretty_text` is formatted again only when the contents
    changed since the last call (compared by ``repr(cfg.to_dict())``, milliseconds)."""

    @property
    def pretty_text(self) -> str:
        contents = repr(self.to_dict())
        cached = self.__dict__.get('_formatted')
        if cached is None or cached[0] != contents:
            # yapf makes ~10^6 short-lived objects, and each collection would walk the
            # whole heap, a runner built before included (its model and data)
            gc.disable()
            try:
                cached = (contents, super().pretty_text)
            finally:
                gc.enable()
            object.__setattr__(self, '_formatted', cached)
        return cached[1]

    @classmethod
    def of(cls, cfg) -> 'OnceFormattedConfig':
        """A copy of ``cfg`` (a ``Config``: its contents, text, file name and options;
        or a dict) as this class; ``cfg`` itself when it is one already."""
        if isinstance(cfg, cls):
            return cfg
        if not isinstance(cfg, Config):
            cfg = Config(cfg)
        other = cls.__new__(cls)
        other.__setstate__(copy.deepcopy(cfg.__getstate__()))
        return other
