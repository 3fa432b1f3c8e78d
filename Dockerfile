# mailctl in a container: `npm run build` makes one self-contained executable (migrations embedded);
# the runtime image holds only that binary and CA certificates.
#
#   docker build -t mailctl .
#   docker run -d --name mailctl -p 3000:3000 -p 25:2525 -p 587:2587 -v mailctl-data:/data \
#     -e MAILCTL_HOSTNAME=mail.example.com -e MAILCTL_PUBLIC_URL=https://mail.example.com mailctl
#   docker exec mailctl mailctl project create --name shop --json

FROM node:22-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# the fixes to dependencies, applied by npm ci's postinstall (patch-package)
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && ./dist/mailctl --help > /dev/null

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin mailctl \
 && mkdir -p /data && chown mailctl /data
COPY --from=build /src/dist/mailctl /usr/local/bin/mailctl
USER mailctl
WORKDIR /data
ENV MAILCTL_DATA_DIR=/data \
    MAILCTL_HTTP_HOST=0.0.0.0 \
    MAILCTL_HTTP_PORT=3000 \
    MAILCTL_SMTP_INBOUND_PORT=2525 \
    MAILCTL_SMTP_RELAY_PORT=2587 \
    MAILCTL_SMTP_SECURE_PORT=2465
VOLUME ["/data"]
# HTTP API, inbound SMTP (publish as 25), SMTP relay (publish as 587), implicit TLS with a certificate
# (publish as 465): a non-root user cannot bind ports below 1024
EXPOSE 3000 2525 2587 2465
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/3000 && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '200' <&3"]
ENTRYPOINT ["mailctl"]
CMD ["serve"]
