"""Every system's model config checked against its model (imports the models: torch).

:mod:`mmt_repro.settings` reads and checks a paper's settings without importing torch or any
model (planning needs the settings only); this module is the layer above both (see
``docs/architecture.md``): each system's ``model_config`` (and its ``by_pair`` overrides)
against the registered model's dataclass, ``visual`` against the model class, and
``reverse_of`` against the directions the model holds. The workflow runs it once at the start
of a real run (``onstart``).
"""

from __future__ import annotations

from .config import ConfigError
from .settings import PaperSettings, import_model_modules


def check_model_configs(settings: PaperSettings, only: str | None = None) -> None:
    """Check each system's ``model_config`` against its model's dataclass and ``visual``
    against the model class (imports torch)."""
    import mmt_repro.models  # noqa: F401  (registers the package's models)
    from .models.registry import make_config, model_class

    import_model_modules(settings.imports)

    for name, system in settings.systems.items():
        if only is not None and name != only:
            continue
        where = f"{settings.path}: system '{name}'"
        try:
            make_config(system.model, system.model_config)
            cls = model_class(system.model)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{where}: {err}") from err
        if cls.visual != system.visual:
            raise ConfigError(f"{where}: visual is {system.visual!r} but model {system.model} reads "
                              f"{cls.visual!r}; set `visual: {cls.visual}`")
        try:
            for pair in system.by_pair:
                make_config(system.model, system.for_pair(pair)[0])
        except (TypeError, ValueError) as err:
            raise ConfigError(f"{where}: by_pair: {err}") from err
        if system.reverse_of and "backward" not in cls.directions:
            raise ConfigError(f"{where}: reverse_of {system.reverse_of!r}, but model {system.model} decodes only "
                              f"{', '.join(cls.directions)}: it holds no backward model")
