type Content = {type: "text"; text: string} | {type: string; [key: string]: unknown};
declare const tools: {
  /** A name that is not an identifier. */
  "fs-read file"(args: {"content-type"?: string; path: string}): Promise<Content[]>;
  /** A recursive schema, a union and a map. */
  tree__node(args?: {
    both?: {x?: number} & {y?: number};
    extra?: {a?: boolean; [key: string]: unknown};
    mode?: "fast" | 2 | null;
    root?: {children?: unknown[]; name?: string};
    tags?: {[key: string]: Array<string | number>};
    target?: string | {id: number};
  }): Promise<Content[]>;
  noargs(args?: {[key: string]: unknown}): Promise<Content[]>;
  empty_closed(args?: {}): Promise<{items?: {id?: string}[]}>;
};
