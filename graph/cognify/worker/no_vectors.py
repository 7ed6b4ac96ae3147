"""cognee's vector store for flowbaby: none.

cognee embeds every entity, type, relationship name, chunk and summary it builds and upserts
them into its own vector collections (LanceDB, or pgvector on the team backend), which only
cognee's own search reads. flowbaby never
calls cognee's search: retrieval reads flowbaby's chunk vectors (written when a memory is
staged) and the graph projection. In a burst of 100 summaries those upserts were the critical
path: cognee's LanceDB adapter serialises them behind one lock, which was held 33 of 45 s.

The worker registers this store (cognee_runtime.install_no_vectors) on both backends unless
FLOWBABY_COGNEE_VECTORS=1. Writes are dropped, reads find nothing, deletes have nothing to delete."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from cognee.infrastructure.databases.vector.vector_db_interface import VectorDBInterface


class NoVectors(VectorDBInterface):
    """cognee's VectorDBInterface with nothing behind it."""

    def __init__(self, embedding_engine: Any = None, **_connection: Any) -> None:
        self.embedding_engine = embedding_engine

    async def has_collection(self, collection_name: str) -> bool:
        return False

    async def create_collection(self, collection_name: str, payload_schema: Any | None = None) -> None:
        return None

    async def create_data_points(self, collection_name: str, data_points: list[Any]) -> None:
        return None

    async def retrieve(self, collection_name: str, data_point_ids: list[str]) -> list[Any]:
        return []

    async def search(self, collection_name: str, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    async def batch_search(self, collection_name: str, query_texts: list[str], *args: Any, **kwargs: Any) -> list[Any]:
        return [[] for _ in query_texts]

    async def delete_data_points(self, collection_name: str, data_point_ids: list[UUID]) -> None:
        return None

    async def remove_belongs_to_set_tags(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def prune(self) -> None:
        return None

    async def embed_data(self, data: list[str]) -> list[list[float]]:
        return list(await self.embedding_engine.embed_text(data))

    async def create_vector_index(self, index_name: str, index_property_name: str) -> None:
        return None

    async def index_data_points(self, index_name: str, index_property_name: str, data_points: list[Any]) -> None:
        return None
