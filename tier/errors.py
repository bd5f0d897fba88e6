"""The tier's refusals: a status, a short code and a message, answered as JSON."""

import json


class TierError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> bytes:
        return json.dumps({"error": self.code, "message": self.message}).encode()


def bad_request(message: str) -> TierError:
    return TierError(400, "BadRequest", message)


def not_found(message: str) -> TierError:
    return TierError(404, "NotFound", message)


def gone(message: str) -> TierError:
    return TierError(410, "Gone", message)


def conflict(message: str) -> TierError:
    return TierError(409, "Conflict", message)


def insufficient_storage(message: str) -> TierError:
    return TierError(507, "InsufficientStorage", message)
