"""A multi-model serving container (SageMaker's "Custom Containers Contract for Multi-Model
Endpoints"), standard library only: `docker run IMAGE serve` listens on port 8080.

Each model is a model.tar.gz holding `model.json`, {"coefficient": <number>}; the model
multiplies what it is sent (a JSON number, or a list of them) by it. The platform manages models:

  GET    /ping                      healthy
  POST   /models                    {"model_name", "url"}: load <url>/model.json (409 if loaded)
  GET    /models                    {"models": [{"modelName", "modelUrl"}]}
  GET    /models/<name>             {"modelName", "modelUrl"} (404 if not loaded)
  DELETE /models/<name>             unload (404 if not loaded)
  POST   /models/<name>/invoke      {"model", "prediction", "loads"}; `loads` counts how many
                                    times this container loaded the model (an unload shows)

A container of a single-model endpoint gets `POST /invocations`, which this one refuses."""

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL_PATH = re.compile(r"^/models/(?P<name>[^/]+)(?P<invoke>/invoke)?$")

_lock = threading.Lock()
_models: dict[str, dict] = {}  # model_name -> {"url", "coefficient"}
_loads: dict[str, int] = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else small answers wait ~40 ms for the client's delayed ACK

    def do_GET(self):
        if self.path == "/ping":
            return self._answer(200, {})
        if self.path.split("?")[0] == "/models":
            with _lock:
                listed = [{"modelName": name, "modelUrl": model["url"]} for name, model in _models.items()]
            return self._answer(200, {"models": listed})
        match = MODEL_PATH.match(self.path)
        model = _models.get(match["name"]) if match and not match["invoke"] else None
        if model is None:
            return self._answer(404, {"error": f"no model loaded at {self.path}"})
        return self._answer(200, {"modelName": match["name"], "modelUrl": model["url"]})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/models":
            return self._load(body)
        match = MODEL_PATH.match(self.path)
        if match and match["invoke"]:
            return self._invoke(match["name"], body)
        return self._answer(400, {"error": "a multi-model container serves POST /models/<name>/invoke"})

    def do_DELETE(self):
        match = MODEL_PATH.match(self.path)
        with _lock:
            gone = _models.pop(match["name"], None) if match and not match["invoke"] else None
        if gone is None:
            return self._answer(404, {"error": f"no model loaded at {self.path}"})
        return self._answer(200, {})

    def _load(self, body: bytes):
        try:
            request = json.loads(body)
            name, url = request["model_name"], request["url"]
            coefficient = float(json.loads((Path(url) / "model.json").read_text())["coefficient"])
        except (ValueError, KeyError, TypeError, OSError) as error:
            return self._answer(500, {"error": f"cannot load the model: {error}"})
        with _lock:
            if name in _models:
                return self._answer(409, {"error": f"model {name} is loaded already"})
            _models[name] = {"url": url, "coefficient": coefficient}
            _loads[name] = _loads.get(name, 0) + 1
        return self._answer(200, {})

    def _invoke(self, name: str, body: bytes):
        with _lock:
            model, loads = _models.get(name), _loads.get(name, 0)
        if model is None:
            return self._answer(404, {"error": f"model {name} is not loaded"})
        try:
            value = json.loads(body)
            scale = model["coefficient"]
            prediction = [scale * x for x in value] if isinstance(value, list) else scale * value
        except (ValueError, TypeError) as error:
            return self._answer(400, {"error": f"send a JSON number or list of numbers: {error}"})
        target = self.headers.get("X-Amzn-SageMaker-Target-Model", "")
        return self._answer(200, {"model": target, "prediction": prediction, "loads": loads})

    def _answer(self, status: int, payload: dict):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        sys.stderr.write("%s\n" % (format % args))


def main(port: int = 8080) -> None:
    ThreadingHTTPServer(("", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
