# syntax=docker/dockerfile:1
# Build stage: npm installs the locked dependencies (Bun comes with them), then the single binary.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json bunfig.toml ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build && ./dist/kgs version

# Runtime stage: the binary alone on a slim base, as an unprivileged user.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/kgs --shell /usr/sbin/nologin kgs \
 && mkdir -p /var/lib/kgs && chown kgs:kgs /var/lib/kgs && chmod 0700 /var/lib/kgs
COPY --from=build /src/dist/kgs /usr/local/bin/kgs
USER kgs
WORKDIR /var/lib/kgs
ENV DATA_DIR=/var/lib/kgs HOST=0.0.0.0 PORT=8080
VOLUME ["/var/lib/kgs"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 CMD ["kgs", "healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["kgs"]
CMD ["serve"]
