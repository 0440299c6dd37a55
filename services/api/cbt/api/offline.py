"""An app over stand-in ports that refuse every call: enough to generate the OpenAPI document without any store."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, NoReturn

from fastapi import FastAPI

from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.web import create_app
from cbt.config.settings import Config
from cbt.models.dag import ModelSet


class Offline:
    """Every port method: raises (nothing may read or write through an offline app)."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*_: Collection[object], **__: object) -> NoReturn:
            raise RuntimeError(f"offline app: {name} is not available")

        return refuse


def offline_app() -> FastAPI:
    return create_app(ApiContext(config=Config(), models=ModelSet({}), hot=Offline(), refresh=Offline(),
                                 admin=Offline(), commands=Offline(), events=EventHub()))
