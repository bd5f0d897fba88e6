# A stand-in for the upstream python:3.11-slim-bookworm: Debian's Python 3.11, with `python`
# and `python -m venv` as the upstream image has them.
ARG ROOTFS
FROM ${ROOTFS}
RUN ln -s /usr/bin/python3 /usr/local/bin/python
ENV LANG=C.UTF-8
CMD ["python3"]
