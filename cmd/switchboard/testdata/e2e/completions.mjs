// completions.mjs: completion/complete for a prompt argument and for a
// resource template variable, through the gateway.
//
//   node completions.mjs --url URL [--prefix everything__]
//
// 1. ref/prompt <prefix>completable-prompt, argument department = "E"
//    -> values include "Engineering" and all start with "E".
// 2. ref/prompt, argument name = "" with context {department: "Sales"}
//    -> exactly the Sales team (context travels through).
// 3. ref/resource demo://resource/dynamic/text/{resourceId} (as listed by
//    resources/templates/list: "<upstream>+demo://…" of the upstream behind
//    --prefix where the gateway namespaced it), argument resourceId = "7" -> ["7"].
import { connect, disconnect, expect, parseFlags, pickURI, run } from "./lib.mjs";

const flags = parseFlags();

await run("completions", flags.timeout, async (summary) => {
  summary.step = "connect";
  const client = await connect(flags.url, "switchboard-e2e-completions");
  try {
    expect(client.getServerCapabilities()?.completions, `server capabilities lack completions: ${JSON.stringify(client.getServerCapabilities())}`);
    const prompt = `${flags.prefix}completable-prompt`;

    summary.step = `complete ${prompt} department`;
    const dep = await client.complete({ ref: { type: "ref/prompt", name: prompt }, argument: { name: "department", value: "E" } });
    const depValues = dep.completion?.values ?? [];
    summary.department = depValues;
    expect(depValues.length > 0, `department "E": no values: ${JSON.stringify(dep)}`);
    expect(depValues.includes("Engineering"), `department "E": want Engineering in ${JSON.stringify(depValues)}`);
    expect(depValues.every((v) => v.startsWith("E")), `department "E": values not all starting with E: ${JSON.stringify(depValues)}`);

    summary.step = `complete ${prompt} name with context`;
    const name = await client.complete({
      ref: { type: "ref/prompt", name: prompt },
      argument: { name: "name", value: "" },
      context: { arguments: { department: "Sales" } },
    });
    const nameValues = name.completion?.values ?? [];
    summary.nameForSales = nameValues;
    expect(JSON.stringify(nameValues) === JSON.stringify(["David", "Eve", "Frank"]), `name for Sales: want ["David","Eve","Frank"], got ${JSON.stringify(nameValues)}`);

    summary.step = "resources/templates/list";
    const templates = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
      const res = await client.listResourceTemplates(cursor === undefined ? {} : { cursor });
      templates.push(...res.resourceTemplates);
      cursor = res.nextCursor;
      if (cursor === undefined) break;
    }
    const uriTemplate = pickURI(templates.map((t) => t.uriTemplate), "demo://resource/dynamic/text/", flags.prefix);
    const tpl = templates.find((t) => t.uriTemplate === uriTemplate);
    expect(tpl, `no demo://resource/dynamic/text/* template in ${JSON.stringify(templates.map((t) => t.uriTemplate))}`);
    summary.template = tpl.uriTemplate;
    const variable = /\{([^}]+)\}/.exec(tpl.uriTemplate)?.[1];
    expect(variable, `template ${tpl.uriTemplate} has no variable`);

    summary.step = `complete ${tpl.uriTemplate}`;
    const res = await client.complete({ ref: { type: "ref/resource", uri: tpl.uriTemplate }, argument: { name: variable, value: "7" } });
    const resValues = res.completion?.values ?? [];
    summary.resourceValues = resValues;
    expect(resValues.length > 0, `resource template ${variable}="7": no values: ${JSON.stringify(res)}`);
    expect(resValues.includes("7"), `resource template ${variable}="7": want "7" in ${JSON.stringify(resValues)}`);
  } finally {
    await disconnect(client);
  }
});
