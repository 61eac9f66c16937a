// **Hand-written**: a stand-in for test-videos.co.uk, the CDN that the real
// `@modelcontextprotocol/server-video-resource` fetches its videos from and that this machine cannot reach.
// It fakes the network only; the MCP server, its app and formwork stay real.
//
//   node video_cdn.mjs <certificate.pem> <key.pem> <log file>
//
// An HTTP proxy on 127.0.0.1, its port printed as the first line of stdout. `CONNECT test-videos.co.uk:443`
// gets a tunnel to an HTTPS server of its own with the certificate given (issued for test-videos.co.uk by a test
// CA, which the video server trusts through NODE_EXTRA_CA_CERTS; it reaches the proxy through NODE_USE_ENV_PROXY
// and HTTPS_PROXY). `GET` of the 1 MB video's path answers a media file the browser can play, VIDEO_BYTES bytes
// long: a WAV file (8 kHz, mono, 8-bit PCM, 131.0665 s of a 500 Hz square wave); every other path gets 404. Each request appends "<method> <path> <status>" to the log file. Any other CONNECT gets 403.
// The stand-in exits when its stdin closes, so it never outlives its test.

import { appendFileSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";

const VIDEO_PATH = "/vids/bigbuckbunny/mp4/h264/360/Big_Buck_Bunny_360_10s_1MB.mp4";
const VIDEO_BYTES = 1 << 20;

const [certificate, key, log] = process.argv.slice(2);
if (!log) {
  console.error("usage: node video_cdn.mjs <certificate.pem> <key.pem> <log file>");
  process.exit(2);
}
const SAMPLE_RATE = 8000;
const video = Buffer.alloc(VIDEO_BYTES);
const samples = VIDEO_BYTES - 44;
video.write("RIFF", 0);
video.writeUInt32LE(VIDEO_BYTES - 8, 4);
video.write("WAVEfmt ", 8);
video.writeUInt32LE(16, 16);
video.writeUInt16LE(1, 20); // PCM
video.writeUInt16LE(1, 22); // one channel
video.writeUInt32LE(SAMPLE_RATE, 24);
video.writeUInt32LE(SAMPLE_RATE, 28); // bytes per second
video.writeUInt16LE(1, 32); // bytes per frame
video.writeUInt16LE(8, 34); // bits per sample
video.write("data", 36);
video.writeUInt32LE(samples, 40);
for (let i = 0; i < samples; i++) video[44 + i] = (i >> 3) % 2 ? 160 : 96;

const cdn = https.createServer({ cert: readFileSync(certificate), key: readFileSync(key) }, (request, response) => {
  const found = request.method === "GET" && request.url === VIDEO_PATH;
  appendFileSync(log, `${request.method} ${request.url} ${found ? 200 : 404}\n`);
  if (!found) {
    response.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
    return;
  }
  response.writeHead(200, { "Content-Type": "video/mp4", "Content-Length": String(video.length) }).end(video);
});

const proxy = http.createServer((request, response) => response.writeHead(405).end());
proxy.on("connect", (request, socket, head) => {
  if (request.url !== "test-videos.co.uk:443") {
    socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
    return;
  }
  socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length > 0) socket.unshift(head);
  cdn.emit("connection", socket);
});
proxy.listen(0, "127.0.0.1", () => console.log(proxy.address().port));

process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
