"""The HTTP routes made from the method table (graph.core.methods): a typed operation's route parses its
JSON body (BODY_ROUTES) or its query string and path (QUERY_ROUTES) into the row's contract model, with the
error the row's callers parse, calls the service and answers the reply model."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

import graph.core.jsonwire as jsonwire
from api.tenancy import BROWSER
from graph.api import MemoryService
from graph.core.contract import AGENT, PERSON, ErrorCode, FlowbabyError, RetrievalError, RetrievalErrorCode
from graph.core.methods import BODY_ROUTES, METHODS, QUERY_ROUTES, Method, request_of

BODIES: dict[str, type[BaseModel]] = {
    method.http.split(" ")[1].split("?")[0]: method.body for method in METHODS if method.http and method.body
}
"""Bodies are parsed by the service or the row's parse (so errors read as in the bridge), not by FastAPI;
the OpenAPI document still names their contract models (the method table's `body`)."""

WRITES = frozenset({"ingest", "store_memory", "confirm_supersession"})
"""The operations that record who made the change (graph.core.provenance)."""

_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


async def json_body(request: Request, retrieval: bool) -> Any:
    try:
        return jsonwire.loads(await request.body() or b"null")
    except jsonwire.JSONInputError as exc:
        message = f"Body is not valid JSON: {exc}"
        if retrieval:
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, message) from None
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, message) from None


def _verb_path(method: Method) -> tuple[str, str]:
    assert method.http is not None
    verb, path = method.http.split(" ")
    return verb, path


async def _call(service: MemoryService, method: Method, params: Any) -> Any:
    """The service's reply; a contract model is serialised by pydantic directly (FastAPI's own encoding of
    a 2,000-node graph snapshot took ~70 ms), the row's `response` still documenting it."""
    request = await request_of(service, method, params) if method.parse is not None else params
    kwargs = dict(method.kwargs)
    if method.service in WRITES:  # the person's page, or an agent's token (graph.core.provenance)
        kwargs["writer"] = PERSON if BROWSER.get() else AGENT
    reply = await getattr(service, method.service)(*method.args, request, **kwargs)
    if isinstance(reply, BaseModel):
        return Response(reply.model_dump_json(), status_code=method.status, media_type="application/json")
    return reply


def body_route(app: FastAPI, service: MemoryService, method: Method) -> None:
    """The route of a row that hands its JSON body to the service (BODY_ROUTES)."""
    verb, path = _verb_path(method)

    async def route(request: Request) -> Any:
        return await _call(service, method, await json_body(request, retrieval=False))

    _add(app, method, route, method.service)


def _fields(method: Method) -> dict[str, Any]:
    """The JSON Schema of each field of the row's request model (its parse's model)."""
    model = method.parse.args[0]  # type: ignore[union-attr]  # parse is partial(validate_*, Model)
    properties: dict[str, Any] = model.model_json_schema()["properties"]
    return properties


def _typed(name: str, value: str, schema: dict[str, Any]) -> Any:
    """A query parameter as its field's type. A value that is not one is INVALID_REQUEST naming it,
    whatever the row's reply shape, as FastAPI answered a declared parameter of the wrong type."""
    types = {schema.get("type")} | {option.get("type") for option in schema.get("anyOf", ())}
    if "integer" in types:
        if re.fullmatch(r"[+-]?\d+", value.strip()):
            return int(value)
        kind = "a valid integer"
    elif "boolean" in types:
        if value.lower() in _BOOLEANS:
            return _BOOLEANS[value.lower()]
        kind = "a valid boolean"
    else:
        return value
    message = f'Parameter "{name}": Input should be {kind}'
    raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, message, fields=[name])


def query_route(app: FastAPI, service: MemoryService, method: Method) -> None:
    """The route of a typed row without a body (QUERY_ROUTES): its fields from the row's query parameters
    (others are ignored, unless the row reads the query string itself: `from_query`) and its path."""
    verb, path = _verb_path(method)
    fields = _fields(method)
    in_path = re.findall(r"{(\w+)}", path)

    async def route(request: Request) -> Any:
        given = request.query_params
        if method.from_query is not None:
            params = method.from_query(given.multi_items())
        else:
            params = {name: _typed(name, given[name], fields[name]) for name in method.query if name in given}
        return await _call(service, method, {**params, **request.path_params})

    parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in in_path]
    parameters += [{"name": name, "in": "query", "required": False, "schema": fields[name]} for name in method.query]
    name = f"{method.service}_{'_'.join(method.args) or verb.lower()}"
    _add(app, method, route, name, openapi_extra={"parameters": parameters})


def _add(app: FastAPI, method: Method, route: Callable[[Request], Awaitable[Any]], name: str, **extra: Any) -> None:
    verb, path = _verb_path(method)
    app.add_api_route(
        path,
        route,
        methods=[verb],
        status_code=method.status,
        response_model=method.response,
        name=name,
        summary=method.bridge,
        **extra,
    )


def table_routes(app: FastAPI, service: MemoryService) -> None:
    for method in BODY_ROUTES:
        body_route(app, service, method)
    for method in QUERY_ROUTES:
        query_route(app, service, method)


def document_bodies(app: FastAPI) -> dict[str, Any]:
    """The generated OpenAPI document, with each body's model and the models it uses
    registered under components/schemas, so $refs resolve for clients and fuzzers."""
    if app.openapi_schema is None:
        spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        for path, model in BODIES.items():
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[model.__name__] = schema
            ref = {"$ref": f"#/components/schemas/{model.__name__}"}
            spec["paths"][path]["post"]["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": ref}},
            }
        app.openapi_schema = spec
    return app.openapi_schema
