// Preloaded into Node processes that LocalStack starts (NODE_OPTIONS=--require ...).
// kinesis-mock, which backs DynamoDB Streams, has no host setting and listens on all
// interfaces; servers asking for no host or a wildcard host get 127.0.0.1 instead.
"use strict";
const net = require("net");

const WILDCARDS = new Set(["0.0.0.0", "::", ""]);
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    if (first.port !== undefined && first.path === undefined && (first.host === undefined || WILDCARDS.has(first.host))) {
      args[0] = { ...first, host: "127.0.0.1" };
    }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] !== "string") {
      args.splice(1, 0, "127.0.0.1");
    } else if (WILDCARDS.has(args[1])) {
      args[1] = "127.0.0.1";
    }
  }
  return listen.apply(this, args);
};
