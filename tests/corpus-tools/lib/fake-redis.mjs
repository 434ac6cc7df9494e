// A loopback stand-in for a Redis server, started next to
// @modelcontextprotocol/server-redis (which exits when it cannot connect)
// so that its tools can be listed. It answers every command with `+OK`
// (and `HELLO` with an error, so the client falls back to RESP2). It is never
// asked for data: only `tools/list` is sent to the MCP server.
import { createServer } from 'node:net';

const port = Number(process.argv[2] ?? 6379);
const server = createServer((socket) => {
  socket.on('data', (chunk) => {
    // One reply per command: count the RESP arrays (`*<n>`) at line starts.
    const text = chunk.toString('latin1');
    const commands = text.split('\r\n').filter((line) => /^\*\d+$/.test(line)).length || 1;
    const hello = /hello/i.test(text);
    for (let i = 0; i < commands; i++) socket.write(hello && i === 0 ? '-ERR unknown command\r\n' : '+OK\r\n');
  });
  socket.on('error', () => {});
});
server.listen(port, '127.0.0.1');
// Stops with the namespace's last process; never outlives the MCP server for long.
setTimeout(() => process.exit(0), 120_000).unref();
