"""What a verified request carries into a handler."""
import uuid
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RequestContext:
    account_id: str
    region: str
    access_key_id: str
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
