type Content = {type: "text"; text: string} | {type: string; [key: string]: unknown};
declare const tools: {
  /**
   * Create an issue in a repository.
   * Returns the new issue.
   */
  github__create_issue(args: {
    assignee?: string | null;
    labels?: string[];
    milestone?: {due?: string; number: number};
    /** The repository's owner */ owner: string;
    repo: string;
    /** @default "open" */ state?: "open" | "closed";
    /** A title; *\/ cannot end the comment */ title: string;
  }): Promise<{number: number; url: string}>;
  /** List issues. */
  github__list_issues(args: {
    owner: string;
    /** @default 1 */ page?: number;
    repo: string;
  }): Promise<Content[]>;
};
