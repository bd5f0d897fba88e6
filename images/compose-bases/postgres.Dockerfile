# A stand-in for the upstream postgres:15-bookworm: Debian's PostgreSQL 15, initialised on first
# start from POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB as upstream's entrypoint does.
ARG ROOTFS
FROM ${ROOTFS}
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data \
    LANG=C.UTF-8
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN mkdir -p "$PGDATA" /var/run/postgresql \
    && chown postgres:postgres "$PGDATA" /var/run/postgresql \
    && chmod 700 "$PGDATA"
VOLUME /var/lib/postgresql/data
ENTRYPOINT ["docker-entrypoint.sh"]
# Upstream's choice: SIGINT is PostgreSQL's fast shutdown.
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]
