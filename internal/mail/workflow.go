package mail

import "strings"

// WorkflowKind is the kind of the mail a workflow's email step sends.
const WorkflowKind = "workflow"

// WorkflowNotification is a notification a workflow mails to one member:
// its title as the subject ("[Perch] …"), its message, severity and source,
// and a line naming the workflow that sent it. link is the notification's
// URL, or Perch's when it has none.
func WorkflowNotification(to, title, message, severity, source, link, workflow string) Message {
	message = strings.ReplaceAll(strings.TrimSpace(message), "\r\n", "\n")
	return render(WorkflowKind, data{To: to, Subject: title, Body: message, Lines: strings.Split(message, "\n"),
		Severity: severity, Source: source, Link: link, Workflow: workflow})
}
