// The floor of any Node gateway: a bare HTTP hop (Node's server, one keep-alive request to the
// subgraph, the answer's bytes passed back), with no GraphQL work at all. bench/gateway_overhead.py
// measures it beside Hive Gateway, so the table says how much of the gateway's cost is the hop.
//
//     node bench/loopback_proxy.mjs PORT UPSTREAM_URL
import http from "node:http";

const [port, upstream] = process.argv.slice(2);
const target = new URL(upstream);
const agent = new http.Agent({ keepAlive: true });

function readAll(stream, done) {
  const chunks = [];
  stream.on("data", (chunk) => chunks.push(chunk));
  stream.on("end", () => done(Buffer.concat(chunks)));
}

http
  .createServer((request, response) => {
    readAll(request, (body) => {
      const headers = { "content-type": "application/json", "content-length": body.length };
      const forwarded = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: "POST", agent, headers }, (answer) =>
        readAll(answer, (bytes) => {
          response.writeHead(answer.statusCode, { "content-type": "application/json", "content-length": bytes.length });
          response.end(bytes);
        }),
      );
      forwarded.on("error", () => {
        response.writeHead(502);
        response.end();
      });
      forwarded.end(body);
    });
  })
  .listen(Number(port), "127.0.0.1");
