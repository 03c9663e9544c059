"""GET /v1/categories: fastsse's verdict categories in the order they are checked."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

import fastsse

from ..deps import ReadCaller
from ..schemas import Problem

router = APIRouter(prefix="/v1/categories", tags=["read"])


class Category(BaseModel):
    category: str
    message: str = Field(description="Its plain sentence (a verdict may say more precisely).")
    retryable: bool = Field(
        description="Whether the same request, sent again, likely succeeds "
        "(for upstream_error the error code can say no)."
    )


class Categories(BaseModel):
    categories: list[Category] = Field(
        description="In the order fastsse checks them: the first that holds is a verdict's category."
    )


@router.get(
    "", response_model=Categories, summary="The verdict categories, in order", responses={401: {"model": Problem}}
)
async def get_categories(_team: ReadCaller) -> Categories:
    return Categories(
        categories=[
            Category(category=name, message=fastsse.MESSAGES[name], retryable=fastsse.RETRYABLE[name])
            for name in fastsse.CATEGORIES
        ]
    )
