# A message moved or copied out of Junk (imapsieve_mailbox2, from Junk, cause COPY):
# learn it as ham, unless it went to the Trash (thrown away is not "not spam") or
# back into Junk.
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];

if environment :matches "imap.mailbox" "*" {
  set "mailbox" "${1}";
}
if string :is "${mailbox}" ["Trash", "Junk"] {
  stop;
}
pipe :copy "spamnb-learn" ["ham"];
