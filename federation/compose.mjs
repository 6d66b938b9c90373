// Compose one subgraph's SDL (read from the file given) with both real composers.
// Prints a JSON report; exits 1 when either composer reports an error.
import { readFileSync } from "node:fs";
import { parse } from "graphql";
import { composeServices as composeWithGuild } from "@theguild/federation-composition";
import { composeServices as composeWithApollo } from "@apollo/composition";

const [sdlPath, name = "kernelindex", url = "http://127.0.0.1:8000/graphql"] = process.argv.slice(2);
const typeDefs = parse(readFileSync(sdlPath, "utf8"));
const services = [{ name, url, typeDefs }];

const messages = (errors) => (errors ?? []).map((e) => e.message);
const guild = composeWithGuild(services);
const apollo = composeWithApollo(services);
const report = {
  guild: { errors: messages(guild.errors), ok: !guild.errors?.length },
  apollo: { errors: messages(apollo.errors), ok: !apollo.errors?.length },
  supergraphSdl: guild.supergraphSdl ?? null,
};
console.log(JSON.stringify(report));
process.exit(report.guild.ok && report.apollo.ok ? 0 : 1);
