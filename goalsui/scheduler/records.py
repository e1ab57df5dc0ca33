"""Record objects for the turns, built from claimed rows without per-field ORM overhead.

``Intent(**row)`` costs ~0.3 ms (instrumented attribute sets); a scheduler that fires
thousands of intents per second cannot afford it. :func:`build` makes the same detached
instance (SQLAlchemy state from the class manager, pydantic bookkeeping set) in a few µs.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy.orm import configure_mappers
from sqlalchemy.orm.instrumentation import manager_of_class
from sqlmodel import SQLModel

T = TypeVar("T", bound=SQLModel)
_specs: dict[type[SQLModel], tuple[Any, tuple[str, ...], frozenset[str]]] = {}


class _LazyState:
    """The ``_sa_instance_state`` of a built instance, made the first time SQLAlchemy asks
    for it (a change, ``session.add``): a turn that only reads its records never pays for
    it (a state and its weak reference are most of what a build costs)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # on the class: as absent as before
            raise AttributeError(_STATE)
        state = obj.__dict__[_STATE] = self.manager._state_constructor(obj, self.manager)
        return state


_STATE = "_sa_instance_state"


def _spec(cls: type[SQLModel]) -> tuple[Any, tuple[str, ...], frozenset[str]]:
    spec = _specs.get(cls)
    if spec is None:
        configure_mappers()
        names = tuple(cls.model_fields)
        manager: Any = manager_of_class(cls)
        # A non-data descriptor: an instance made any other way has its state in its own
        # dict, which wins. type.__setattr__: the declarative class would map the name.
        type.__setattr__(cls, _STATE, _LazyState(manager))
        spec = _specs[cls] = (manager, names, frozenset(names))
    return spec


def build(cls: type[T], row: dict[str, Any]) -> T:
    """A detached ``cls`` instance with the values of ``row`` (missing fields: their default).

    What ``manager.new_instance()`` and ``SQLModel.__new__`` do, without their call
    layers: the pydantic bookkeeping is set below; the SQLAlchemy instance state is made
    when first needed (:class:`_LazyState`).
    """
    _, names, name_set = _spec(cls)
    obj = object.__new__(cls)
    values = obj.__dict__
    try:
        if row.keys() == name_set:  # the usual case: a full row, copied at C speed
            values.update(row)
        else:
            values.update({name: row[name] for name in names})
        fields_set = set(name_set)
    except KeyError:
        fields = cls.model_fields
        for name in names:
            values[name] = (
                row[name] if name in row else fields[name].get_default(call_default_factory=True)
            )
        fields_set = set(row) & name_set
    object.__setattr__(obj, "__pydantic_fields_set__", fields_set)
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj
