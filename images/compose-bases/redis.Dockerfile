# A stand-in for the upstream redis:7-bookworm: Debian's redis-server, run as the redis user in
# /data, as upstream does.
ARG ROOTFS
FROM ${ROOTFS}
RUN mkdir /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server"]
