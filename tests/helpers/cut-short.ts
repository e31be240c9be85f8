// A server whose every answer promises 100 bytes and sends 10 before hanging up: a download
// broken off mid-body. (Bun.serve cannot be made to do that: it sends what it has, chunked.)
export function startCutShortServer() {
  return Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket) {
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 100\r\n\r\n0123456789')
        socket.end()
      },
    },
  })
}
