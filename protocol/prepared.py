"""Reads of whole rows whose SQL is compiled once per database connection, for the hot read paths
(Describe* operations).

Django builds and compiles a QuerySet's SQL on every call: for DescribeTrainingJob that was about
60% of an API worker's CPU (py-spy), against 6% spent in SQLite itself. A PreparedQuery builds its
QuerySet once with marker values in place of the parameters, keeps the SQL, where each marker
landed among the SQL parameters, the row converters and the model's column names, and each call
then only puts its values in the markers' places, runs the SQL and builds the models.

Parameters are strings, integers and aware datetimes, compared as they are (`=`, `<`, `>`, a
function of the value such as `Lower(Value(...))`); a lookup that transforms its value
(`icontains` wraps it in `%`) is refused when the query is first compiled, never answered wrongly."""

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet

# Per parameter type: the marker of the n-th parameter (values that no query of ours holds: a
# string with NUL bytes, integers far below any primary key, instants in year 1), and the value as
# the database receives it (a datetime is adapted as DateTimeField adapts it: text on SQLite).
_KINDS: dict[type, tuple[Callable[[int], object], Callable[[object, object], object]]] = {
    str: (lambda n: f"\x00prepared parameter {n}\x00", lambda value, ops: value),
    int: (lambda n: -(2**62) - n, lambda value, ops: value),
    datetime: (lambda n: datetime(1, 1, 1, tzinfo=UTC) + timedelta(microseconds=n + 1),
               lambda value, ops: ops.adapt_datetimefield_value(value)),
}

_DJANGO_PLACEHOLDER = re.compile(r"(?<!%)%s")  # what Django's SQLite cursor turns into `?`


@dataclass(frozen=True)
class _Compiled:
    sql: str
    driver_sql: str  # `sql` as the backend's cursor hands it to the database driver
    params: tuple
    positions: tuple[int, ...]  # where each call's values go among `params`, in call order
    adapters: tuple[Callable[[object, object], object], ...]  # how each value reaches the database
    model: type[Model]
    attnames: tuple[str, ...]
    converters: tuple[tuple[int, tuple, object], ...]  # (column, converter functions, expression)


class PreparedQuery:
    """`PreparedQuery(lambda arn: Job.objects.filter(arn=arn)[:1], str)(arn)` → the list of models.
    `build` gets one marker per type given (str, int or datetime) and returns a QuerySet of rows of
    one model (`only()` allowed; no select_related, selected annotations or prefetching)."""

    def __init__(self, build: Callable[..., QuerySet], *parameter_types: type):
        unknown = [kind.__name__ for kind in parameter_types if kind not in _KINDS]
        if unknown:
            raise TypeError(f"only str, int and datetime parameters can be prepared, not {unknown}")
        self._build = build
        self._types = parameter_types
        # Per connection (each thread has its own): converters belong to their connection.
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __call__(self, *values, using: str = DEFAULT_DB_ALIAS) -> list[Model]:
        connection = connections[using]
        compiled = self._compiled.get(connection) or self._compile(connection, using)
        params = list(compiled.params)
        for position, adapt, value in zip(compiled.positions, compiled.adapters, values, strict=True):
            params[position] = adapt(value, connection.ops)
        return [compiled.model.from_db(using, compiled.attnames, _converted(row, compiled, connection))
                for row in _rows(connection, compiled, params)]

    def _compile(self, connection, using: str) -> _Compiled:
        markers = [_KINDS[kind][0](index) for index, kind in enumerate(self._types)]
        adapters = tuple(_KINDS[kind][1] for kind in self._types)
        queryset = self._build(*markers)
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        klass_info = compiler.klass_info or {}
        if (
            klass_info.get("related_klass_infos") or compiler.annotation_col_map
            or queryset._prefetch_related_lookups or klass_info.get("model") is not queryset.model
        ):
            raise TypeError(f"only whole rows of one model can be prepared: {sql}")
        columns = [expression for expression, _, _ in compiler.select]
        compiled = _Compiled(
            sql=sql,
            driver_sql=_driver_sql(connection, sql, params),
            params=tuple(params),
            positions=tuple(
                _position(params, adapt(marker, connection.ops), sql)
                for marker, adapt in zip(markers, adapters, strict=True)
            ),
            adapters=adapters,
            model=queryset.model,
            attnames=tuple(column.target.attname for column in columns),
            converters=tuple(
                (index, tuple(functions), expression)
                for index, (functions, expression) in compiler.get_converters(columns).items()
            ),
        )
        self._compiled[connection] = compiled
        return compiled


def _driver_sql(connection, sql: str, params: list) -> str:
    """The SQL as the driver reads it: sqlite3 takes `?` where Django writes `%s` (and `%` for
    `%%`), which Django's SQLite cursor rewrites on every query; psycopg reads Django's SQL."""
    if connection.vendor != "sqlite":
        return sql
    driver_sql = _DJANGO_PLACEHOLDER.sub("?", sql).replace("%%", "%")
    if driver_sql.count("?") != len(params):  # a literal `?` or `%s` in the SQL: never guess
        raise TypeError(f"the SQL's placeholders do not match its parameters: {sql}")
    return driver_sql


def _rows(connection, compiled: _Compiled, params: list) -> list[tuple]:
    """The rows, read through the driver's own cursor: Django's cursor wrappers around it cost
    about as much as SQLite's own execution of these queries (~13 µs a query). Only while queries
    are logged (DEBUG, tests that count them) does Django's cursor run them, which records them.
    Django's checks before a query and its errors are kept."""
    if connection.queries_logged:
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return cursor.fetchall()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        cursor = connection.connection.cursor()
        try:
            cursor.execute(compiled.driver_sql, params)
            return cursor.fetchall()
        finally:
            cursor.close()


def _position(params: list, marker: object, sql: str) -> int:
    """Where `marker` (as the database receives it) is among the SQL parameters; it must be there
    once, unchanged."""
    positions = [index for index, param in enumerate(params)
                 if type(param) is type(marker) and param == marker]
    transformed = isinstance(marker, str) and any(
        isinstance(param, str) and marker in param and param != marker for param in params
    )
    if len(positions) != 1 or transformed:
        raise TypeError(f"a parameter reaches the database transformed or more than once: {sql}")
    return positions[0]


def _converted(row: tuple, compiled: _Compiled, connection) -> list:
    """The row's values as the ORM would give them (SQLite's text datetimes, JSON fields...)."""
    values = list(row)
    for index, functions, expression in compiled.converters:
        value = values[index]
        for function in functions:
            value = function(value, expression, connection)
        values[index] = value
    return values
